"""Object storage for an update: the spec's ``s3a`` settings as the session needs them, and a check, before any
flow runs, that every object-store location the update uses answers (endpoint, credentials, bucket).

How a user gives the settings (README "Object storage"): in the spec's ``spark_conf`` as
``spark.hadoop.fs.s3a.*`` (or ``fs.s3a.*``) keys, per bucket as ``fs.s3a.bucket.<bucket>.*``, or for the
credentials Hadoop's usual environment variables ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` (read by
``s3a``'s default credential chain). A session's ``spark.hadoop.*`` settings reach Hadoop only when the session
starts; an update sets them on a running session too, as the ``fs.s3a.*`` keys Spark copies into every Hadoop
configuration it builds. Hadoop keeps one file system per bucket per process: the settings in force when a bucket
is first used are the ones that process uses for it.

Secrets (``*.secret.key``, ``*.session.token``, ``AWS_SECRET_ACCESS_KEY``) are registered with
:mod:`framework.redaction`, and the messages here never contain them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from framework import internals
from framework.errors import ObjectStoreError
from framework.redaction import register_secret
from framework.storage.url import ObjectStoreUrl, is_object_store_url, unsafe_object_store_use

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.spec import PipelineSpec

_HADOOP_PREFIX = "spark.hadoop."
_LOG_STORE_KEYS = ("spark.delta.logStore.s3a.impl", "spark.delta.logStore.class")
_SECRET_SUFFIXES = (".secret.key", ".session.token", ".access.key")
# The check fails within seconds instead of after s3a's retries (7 attempts, exponential back-off): one attempt,
# short connection timeouts. Only the check's own file system instance gets these.
_CHECK_CONF = {
    "fs.s3a.attempts.maximum": "1",
    "fs.s3a.retry.limit": "1",
    "fs.s3a.retry.interval": "100ms",
    "fs.s3a.retry.throttle.limit": "1",
    "fs.s3a.connection.establish.timeout": "3s",
    "fs.s3a.connection.timeout": "5s",
    "fs.s3a.connection.acquisition.timeout": "5s",
}
# Hadoop / AWS SDK exception classes (anywhere in the cause chain) -> the error's code
_CAUSES = (
    ("OBJECT_STORE_BUCKET_NOT_FOUND", ("org.apache.hadoop.fs.s3a.UnknownStoreException",
                                       "software.amazon.awssdk.services.s3.model.NoSuchBucketException")),
    ("OBJECT_STORE_ACCESS_DENIED", ("java.nio.file.AccessDeniedException",
                                    "org.apache.hadoop.fs.s3a.auth.NoAuthWithAWSException",
                                    "org.apache.hadoop.fs.s3a.CredentialInitializationException")),
    ("OBJECT_STORE_UNREACHABLE", ("java.net.ConnectException", "java.net.UnknownHostException",
                                  "java.net.NoRouteToHostException", "java.net.SocketTimeoutException",
                                  "org.apache.hadoop.net.ConnectTimeoutException",
                                  "org.apache.hadoop.fs.s3a.AWSClientIOException",
                                  "software.amazon.awssdk.core.exception.SdkClientException")),
)
_WHAT = {
    "OBJECT_STORE_BUCKET_NOT_FOUND": "its bucket does not exist",
    "OBJECT_STORE_ACCESS_DENIED": "the object store refused the credentials (check fs.s3a.access.key / "
                                  "fs.s3a.secret.key or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)",
    "OBJECT_STORE_UNREACHABLE": "the object store's endpoint does not answer (check fs.s3a.endpoint)",
    "OBJECT_STORE_UNAVAILABLE": "the object store could not be used",
}


def hadoop_runtime_conf(spark_conf: Mapping[str, str]) -> dict[str, str]:
    """The spec's ``spark.hadoop.fs.*`` settings as the ``fs.*`` keys a running session passes to Hadoop (kept
    when the spec sets them directly); every secret among them registered for redaction."""
    out: dict[str, str] = {}
    for key, value in spark_conf.items():
        bare = key[len(_HADOOP_PREFIX):] if key.startswith(_HADOOP_PREFIX) else key
        if bare.startswith("fs.") and bare not in spark_conf:
            out[bare] = str(value)
        if bare.endswith(_SECRET_SUFFIXES):
            register_secret(str(value))
    for name in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        if os.environ.get(name):
            register_secret(os.environ[name])
    return out


def startup_conf(spark_conf: Mapping[str, str]) -> dict[str, str]:
    """The spec's ``spark.hadoop.*`` settings, for a session this process starts: only settings given when the
    SparkContext starts reach the Hadoop configuration of a cluster's executors (a schema inference job or a
    Delta write on a worker otherwise meets the object store without credentials); every secret among them
    registered for redaction. A session already running (a warm server, a test's) keeps its own and gets them at
    run time, which its local executors share."""
    hadoop_runtime_conf(spark_conf)  # registers the secrets
    return {k: str(v) for k, v in spark_conf.items() if k.startswith(_HADOOP_PREFIX)}


def object_store_locations(spec: PipelineSpec, extra: Iterable[str] = ()) -> list[str]:
    """Every object-store location the spec names: its storage root, its ``paths:`` targets, its configuration
    values that are object-store URLs, and ``extra``; in that order, without repeats."""
    found = [str(spec.storage), *spec.paths.values(),
             *(v for v in spec.configuration.values() if isinstance(v, str)), *extra]
    seen: dict[str, None] = {}
    for text in found:
        if is_object_store_url(text):
            seen.setdefault(text.rstrip("/"), None)
    return list(seen)


def check_object_store(spark: SparkSession, spec: PipelineSpec, extra: Iterable[str] = ()) -> None:
    """Before any flow: refuse a Delta log store that is unsafe for an object-store location of the update, then
    reach every such location once (a listing: endpoint, credentials and bucket in one request).

    Raises:
        ObjectStoreError: a location cannot be used (code ``OBJECT_STORE_*``, the message names the path and
            what to check, never a secret), or the configured log store could lose commits there.
    """
    locations = object_store_locations(spec, extra)
    if not locations:
        return
    configured = {key: value for key in _LOG_STORE_KEYS
                  if (value := spec.spark_conf.get(key) or spark.sparkContext.getConf().get(key, None))}
    for location in locations:
        unsafe = unsafe_object_store_use(location, configured)
        if unsafe is not None:
            raise ObjectStoreError(f"refused: {unsafe}", code="OBJECT_STORE_UNSAFE_COMMITS", path=location)
    conf = {**hadoop_runtime_conf(spec.spark_conf), **_CHECK_CONF}
    for location in locations:
        _probe(spark, location, conf)


def _probe(spark: SparkSession, location: str, conf: Mapping[str, str]) -> None:
    from py4j.protocol import Py4JJavaError

    jvm: Any = internals.jvm(spark)
    hadoop_conf = internals.hadoop_conf(spark)
    for key, value in conf.items():
        hadoop_conf.set(key, value)
    # The bucket's root: it exists whenever the bucket does (the location itself may not exist yet), and its
    # listing is one request that needs the endpoint, the credentials and the bucket.
    url = ObjectStoreUrl(location)
    root = jvm.org.apache.hadoop.fs.Path(f"{url.scheme}://{url.bucket}/")
    try:
        # a file system of its own (not Hadoop's cached one), so that the short timeouts stay with the check
        fs = jvm.org.apache.hadoop.fs.FileSystem.newInstance(root.toUri(), hadoop_conf)
        try:
            fs.listStatusIterator(root).hasNext()
        finally:
            fs.close()
    except Py4JJavaError as exc:
        code = classify(exc.java_exception)
        raise ObjectStoreError(f"{location}: {_WHAT[code]} ({_java_name(exc.java_exception)})", code=code,
                               path=location) from None


def classify(throwable: Any) -> str:
    """The ``OBJECT_STORE_*`` code of a JVM exception, from the classes in its cause chain (first match of
    :data:`_CAUSES`' order: a missing bucket, refused credentials, an endpoint that does not answer)."""
    chain = []
    for _ in range(12):
        if throwable is None:
            break
        chain.append(_java_name(throwable))
        throwable = throwable.getCause()
    for code, names in _CAUSES:
        if any(name in names for name in chain):
            return code
    return "OBJECT_STORE_UNAVAILABLE"


def _java_name(throwable: Any) -> str:
    return str(throwable.getClass().getName())

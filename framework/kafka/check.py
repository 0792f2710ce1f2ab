"""A Kafka read or sink checked on the driver before Spark plans it: the brokers answer, the topics exist.

Spark's Kafka source does not say either: with ``subscribe`` a topic that does not exist is an empty topic (an
available-now update reads nothing and succeeds), and brokers that are down make the driver's offset requests
wait ``kafka.default.api.timeout.ms`` (60 s) once per retry (``fetchOffset.numRetries``, 3) before a
``TimeoutException`` deep in a ``StreamingQueryException``. Here one admin request (Kafka's own ``Admin`` client
from the ``kafka-clients`` jar Spark's connector runs with, through py4j, with the read's ``kafka.*`` options, so
SASL/SSL settings apply as they will for Spark) lists the topics within :data:`CHECK_TIMEOUT_MS`, and the answer
becomes a :class:`~framework.errors.KafkaError` that names the servers. Failures are told apart by the JVM
exception's class (and its superclasses), never by its text.

Secrets: the values of ``kafka.sasl.jaas.config`` and of every ``*.password`` option, any value written in JAAS
syntax (``...LoginModule required ... ;``, e.g. in the spec's configuration), and the password inside a JAAS
entry are registered with :mod:`framework.redaction`, so that they never show in the console, the event log or
a report, however they were given (the update registers the spec's before its first event).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any

from framework import internals
from framework.errors import KafkaError
from framework.secret_refs import JAAS_ENTRY, JAAS_PASSWORD

CHECK_TIMEOUT_MS = 10_000  # a read's kafka.default.api.timeout.ms, when it sets one, wins
_PREFIX = "kafka."
_AUTH_EXCEPTION = "org.apache.kafka.common.errors.AuthenticationException"
_AUTHZ_EXCEPTION = "org.apache.kafka.common.errors.AuthorizationException"
_TIMEOUT_EXCEPTIONS = ("org.apache.kafka.common.errors.TimeoutException", "java.util.concurrent.TimeoutException")
# The servers of the Kafka reads and sinks checked last in this thread: a flow's query function and its
# streaming query's failure are handled in the flow's own thread, so a Kafka failure of the running query
# (brokers gone after the check) names the servers its flow was checked against
_CHECKED = threading.local()
# An update builds each flow's query twice (to resolve the graph, then to run it): a check that passed is not
# asked again for the same settings and topics within this many seconds (one admin round trip, 0.1-0.4 s warm)
PASSED_TTL_S = 15.0
_PASSED: dict[tuple[tuple[tuple[str, str], ...], tuple[str, ...]], float] = {}


def client_config(options: Mapping[str, str]) -> dict[str, str]:
    """The Kafka client settings of a read's or sink's options: the ``kafka.``-prefixed ones, unprefixed."""
    return {k[len(_PREFIX):]: v for k, v in options.items() if k.lower().startswith(_PREFIX)}


def register_kafka_secrets(options: Mapping[str, str]) -> None:
    """Register the secret values among Kafka options (see the module docstring), or among a spec's
    configuration and Spark settings: a value written in JAAS syntax is a secret whatever its key."""
    from framework.redaction import register_secret

    for key, value in options.items():
        name = key.lower()
        if name.endswith("sasl.jaas.config") or JAAS_ENTRY.search(str(value or "")):
            register_secret(value)
            for password in JAAS_PASSWORD.findall(value):
                if password:
                    register_secret(password)
        elif name.endswith(".password") and value:
            register_secret(value)


def read_topics(options: Mapping[str, str]) -> list[str]:
    """The topics a read names (``subscribe``, ``assign``); none for ``subscribePattern``."""
    lowered = {k.lower(): v for k, v in options.items()}
    if "subscribe" in lowered:
        return [t.strip() for t in lowered["subscribe"].split(",") if t.strip()]
    if "assign" in lowered:
        try:
            assigned = json.loads(lowered["assign"])
        except ValueError:
            raise KafkaError(f"assign must be JSON such as {{\"topicA\": [0, 1]}}, got {lowered['assign']!r}",
                             code="KAFKA_OPTIONS_INVALID") from None
        return sorted(assigned) if isinstance(assigned, dict) else []
    return []


def check_kafka_read(spark: Any, source_format: str | None, options: Mapping[str, str]) -> None:
    """Check a ``format("kafka")`` read (other formats pass): servers given and answering, topics there.

    Raises:
        KafkaError: see :class:`~framework.errors.KafkaError` for the codes.
    """
    if (source_format or "").lower() != "kafka":
        return
    check_topics(spark, options, read_topics(options), what="read")


def check_kafka_sink(spark: Any, options: Mapping[str, str]) -> None:
    """Check a Kafka sink's options before its query starts (its ``topic``, when it names one)."""
    topic = {k.lower(): v for k, v in options.items()}.get("topic")
    check_topics(spark, options, [topic] if topic else [], what="sink")


def check_topics(spark: Any, options: Mapping[str, str], topics: list[str], *, what: str) -> None:
    """The brokers of ``options`` answer within the timeout and every one of ``topics`` exists."""
    register_kafka_secrets(options)
    config = client_config(options)
    servers = config.get("bootstrap.servers", "")
    if not servers:
        raise KafkaError(f"a Kafka {what} needs the option kafka.bootstrap.servers (host:port[,host:port...])",
                         code="KAFKA_OPTIONS_INVALID")
    _CHECKED.servers = servers
    key = (tuple(sorted(config.items())), tuple(topics))
    if time.monotonic() - _PASSED.get(key, float("-inf")) < PASSED_TTL_S:
        return
    existing = list_topics(spark, config)
    missing = [t for t in topics if t not in existing]
    if missing:
        raise KafkaError(f"Kafka topic(s) {', '.join(repr(t) for t in missing)} do not exist on {servers}: create "
                         "them (the broker does not create topics for this read), or fix the topic name",
                         code="KAFKA_TOPIC_NOT_FOUND", servers=servers, topics=missing)
    _PASSED[key] = time.monotonic()


def list_topics(spark: Any, config: Mapping[str, str]) -> set[str]:
    """The topic names of the cluster at ``config['bootstrap.servers']``, through Kafka's JVM admin client."""
    from py4j.protocol import Py4JJavaError

    jvm = internals.jvm(spark)
    props = jvm.java.util.Properties()
    for key, value in config.items():
        props.setProperty(key, value)
    timeout = int(config.get("default.api.timeout.ms") or CHECK_TIMEOUT_MS)
    props.setProperty("default.api.timeout.ms", str(timeout))
    props.setProperty("request.timeout.ms", str(min(timeout, int(config.get("request.timeout.ms") or timeout))))
    admin_package = jvm.org.apache.kafka.clients.admin
    try:
        admin = admin_package.Admin.create(props)
    except Py4JJavaError as exc:  # a setting Kafka's client refuses (unknown protocol, bad JAAS syntax)
        raise KafkaError(f"Kafka refused the client settings for {config['bootstrap.servers']}: "
                         f"{_root_class(exc.java_exception)}", code="KAFKA_OPTIONS_INVALID",
                         servers=config["bootstrap.servers"]) from None
    try:
        names = admin.listTopics(admin_package.ListTopicsOptions().timeoutMs(timeout)).names().get()
        return {str(n) for n in names}
    except Py4JJavaError as exc:
        raise _classified(exc.java_exception, config["bootstrap.servers"], timeout) from None
    finally:
        admin.close(jvm.java.time.Duration.ofMillis(500))


def _classified(throwable: Any, servers: str, timeout: int) -> KafkaError:
    chain = list(_chain(throwable))
    if any(_is_a(t, _AUTH_EXCEPTION) or _is_a(t, _AUTHZ_EXCEPTION) for t in chain):
        return KafkaError(f"the Kafka brokers at {servers} refused the client's credentials (SASL/SSL options "
                          "kafka.security.protocol, kafka.sasl.*, kafka.ssl.*)",
                          code="KAFKA_AUTHENTICATION_FAILED", servers=servers)
    if any(_is_a(t, name) for t in chain for name in _TIMEOUT_EXCEPTIONS):
        return KafkaError(f"no Kafka broker answered at {servers} (kafka.bootstrap.servers) within {timeout} ms: "
                          "is the broker running and reachable from here? (locally: medallion kafka start)",
                          code="KAFKA_BROKER_UNREACHABLE", servers=servers)
    return KafkaError(f"Kafka at {servers} could not list its topics: {_root_class(throwable)}",
                      code="KAFKA_BROKER_UNREACHABLE", servers=servers)


def kafka_failure(throwables: Iterable[Any]) -> KafkaError | None:
    """The typed error for a running Kafka query's failure, from its JVM cause chain (outermost first): brokers
    that stopped answering (Kafka's ``TimeoutException``) or refused credentials; None for anything else."""
    for throwable in throwables:
        servers = getattr(_CHECKED, "servers", "")
        if _is_a(throwable, _AUTH_EXCEPTION) or _is_a(throwable, _AUTHZ_EXCEPTION):
            return KafkaError(f"the Kafka brokers at {servers or '(kafka.bootstrap.servers)'} refused the "
                              "client's credentials while the flow ran", code="KAFKA_AUTHENTICATION_FAILED",
                              servers=servers)
        if _is_a(throwable, _TIMEOUT_EXCEPTIONS[0]):
            return KafkaError(f"Kafka at {servers or '(kafka.bootstrap.servers)'} stopped answering while the "
                              f"flow ran ({_root_class(throwable)}); the micro-batch was not committed and the "
                              "next update reads it again", code="KAFKA_BROKER_UNREACHABLE", servers=servers)
    return None


def _chain(throwable: Any) -> list[Any]:
    out: list[Any] = []
    while throwable is not None and len(out) < 16:
        out.append(throwable)
        cause = throwable.getCause()
        throwable = None if cause is None or cause.equals(throwable) else cause
    return out


def _is_a(throwable: Any, class_name: str) -> bool:
    """Whether the JVM throwable is an instance of the class named (its class or a superclass)."""
    cls = throwable.getClass()
    while cls is not None:
        if str(cls.getName()) == class_name:
            return True
        cls = cls.getSuperclass()
    return False


def _root_class(throwable: Any) -> str:
    """``Class: message`` of the innermost cause (redacted on output like any text)."""
    root = _chain(throwable)[-1]
    message = root.getMessage()
    return f"{root.getClass().getName()}: {message}" if message is not None else str(root.getClass().getName())

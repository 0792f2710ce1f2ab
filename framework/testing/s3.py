"""A throwaway S3-compatible object store for tests: SeaweedFS (``weed mini``) on 127.0.0.1, a free port and a
temporary folder, stopped at the end.

SeaweedFS is a real S3 server (https://github.com/seaweedfs/seaweedfs), not a mock: Hadoop's ``s3a`` client talks
to it exactly as to AWS S3 (signed requests, multipart uploads, path-style addressing, copy-then-delete for a
rename). The binary is built once from its Go module by ``scripts/build_seaweedfs.sh`` (``make setup`` runs it
when Go is there) into ``~/.cache/medallion/seaweedfs/<version>/weed`` (``$XDG_CACHE_HOME`` if set): per user,
not per checkout, so that every clone on a machine, CI's included, builds it once; ``$MEDALLION_WEED`` names
another binary.

The server gets one identity (:data:`ACCESS_KEY` / :data:`SECRET_KEY`, throwaway values that never leave the test
run) and the buckets it is started with; a request signed with other keys is refused (403), as on AWS. Besides
Spark's own client, :class:`S3Server` has a tiny signed HTTP client (:meth:`S3Server.put_object`,
:meth:`S3Server.keys`) so that tests can land files and check what is where without going through the code under
test.

Fixtures (registered by ``framework.testing.plugin``):

- ``s3_server``: one server for the whole test session, with the bucket :data:`BUCKET`;
- ``s3_prefix``: a fresh ``s3a://<bucket>/<random>`` folder for one test.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from framework.errors import EnvironmentSetupError
from framework.testing.postgres import free_port

SEAWEEDFS_VERSION = "v0.0.0-20261109003541-7506e5f91cd6"  # scripts/build_seaweedfs.sh builds the same one
BUCKET = "medallion-test"
ACCESS_KEY = "medallion-test-access"
SECRET_KEY = "medallion-test-secret-key-0123456789"  # a throwaway server's key: it never leaves the test run
REGION = "us-east-1"


def weed_binary() -> Path:
    """The SeaweedFS binary: ``$MEDALLION_WEED``, or the one ``scripts/build_seaweedfs.sh`` caches.

    Raises:
        EnvironmentSetupError: it is not built (``make setup`` builds it where Go is installed).
    """
    if os.environ.get("MEDALLION_WEED"):
        return Path(os.environ["MEDALLION_WEED"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    binary = cache / "medallion" / "seaweedfs" / SEAWEEDFS_VERSION / "weed"
    if not binary.is_file():
        raise EnvironmentSetupError(f"SeaweedFS is not built ({binary} is missing): run `bash "
                                    "scripts/build_seaweedfs.sh` (needs Go; `make setup` runs it), or set "
                                    "MEDALLION_WEED to a weed binary")
    return binary


@dataclass(frozen=True)
class S3Server:
    """A running SeaweedFS S3 endpoint."""

    folder: Path
    port: int
    process: subprocess.Popen[bytes]
    access_key: str = ACCESS_KEY
    secret_key: str = SECRET_KEY

    @property
    def endpoint(self) -> str:
        """The endpoint URL, as ``fs.s3a.endpoint`` takes it."""
        return f"http://127.0.0.1:{self.port}"

    def spark_conf(self, access_key: str | None = None, secret_key: str | None = None,
                   endpoint: str | None = None) -> dict[str, str]:
        """The ``spark.hadoop.fs.s3a.*`` settings that reach this server (other keys or endpoint when given: the
        bad-input tests)."""
        return {
            "spark.hadoop.fs.s3a.endpoint": endpoint or self.endpoint,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
            "spark.hadoop.fs.s3a.endpoint.region": REGION,
            "spark.hadoop.fs.s3a.access.key": access_key or self.access_key,
            "spark.hadoop.fs.s3a.secret.key": secret_key or self.secret_key,
        }

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def request(self, method: str, bucket: str, key: str = "", body: bytes = b"",
                query: Mapping[str, str] | None = None) -> bytes:
        """One signed (AWS Signature V4) request to the server; returns the response body.

        Raises:
            urllib.error.HTTPError: the server refused it.
        """
        path = "/" + urllib.parse.quote(f"{bucket}/{key}" if key else bucket, safe="/-_.~")
        request = urllib.request.Request(self.endpoint + path + _query(query), data=body or None, method=method)
        for name, value in _signed_headers(self, method, path, query or {}, body).items():
            request.add_header(name, value)
        with urllib.request.urlopen(request, timeout=30) as response:
            return bytes(response.read())

    def create_bucket(self, bucket: str) -> None:
        """Create ``bucket`` (no error when it exists already)."""
        try:
            self.request("PUT", bucket)
        except urllib.error.HTTPError as exc:
            if exc.code != 409:  # BucketAlreadyOwnedByYou
                raise

    def put_object(self, url: str, body: bytes | str) -> None:
        """Write one object, ``url`` being ``s3a://bucket/key``."""
        bucket, key = split_url(url)
        self.request("PUT", bucket, key, body.encode() if isinstance(body, str) else body)

    def get_object(self, url: str) -> bytes:
        """The body of one object, ``url`` being ``s3a://bucket/key``."""
        bucket, key = split_url(url)
        return self.request("GET", bucket, key)

    def keys(self, url: str) -> list[str]:
        """The keys under ``s3a://bucket/prefix``, relative to that prefix, sorted."""
        import xml.etree.ElementTree as ElementTree

        bucket, prefix = split_url(url)
        prefix = prefix.rstrip("/") + "/" if prefix else ""
        found: list[str] = []
        token = ""
        while True:
            query = {"list-type": "2", "prefix": prefix, **({"continuation-token": token} if token else {})}
            root = ElementTree.fromstring(self.request("GET", bucket, query=query))
            ns = root.tag.partition("}")[0] + "}" if root.tag.startswith("{") else ""
            found += [e.text or "" for e in root.iter(f"{ns}Key")]
            token = root.findtext(f"{ns}NextContinuationToken") or ""
            if not token:
                return sorted(k[len(prefix):] for k in found)


    def files(self, url: str) -> list[str]:
        """:meth:`keys` without folder markers (the empty ``folder/`` objects Hadoop's s3a client keeps so that a
        folder whose last file moved away still exists, as a local folder does)."""
        return [k for k in self.keys(url) if not k.endswith("/")]


def split_url(url: str) -> tuple[str, str]:
    """``s3a://bucket/some/key`` -> ``("bucket", "some/key")``."""
    parsed = urllib.parse.urlparse(url)
    return parsed.netloc, parsed.path.lstrip("/")


def _query(query: Mapping[str, str] | None) -> str:
    return "?" + _canonical_query(query) if query else ""


def _canonical_query(query: Mapping[str, str]) -> str:
    return "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                    for k, v in sorted(query.items()))


def _signed_headers(server: S3Server, method: str, path: str, query: Mapping[str, str],
                    body: bytes) -> dict[str, str]:
    """The headers of an AWS Signature V4 request (the S3 flavour: the payload's hash in a header)."""
    now = dt.datetime.now(dt.UTC)
    stamp, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    payload = hashlib.sha256(body).hexdigest()
    headers = {"host": f"127.0.0.1:{server.port}", "x-amz-content-sha256": payload, "x-amz-date": stamp}
    names = ";".join(sorted(headers))
    canonical = "\n".join([method, path, _canonical_query(query),
                           *(f"{k}:{headers[k]}" for k in sorted(headers)), "", names, payload])
    scope = f"{day}/{REGION}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + server.secret_key).encode()
    for part in (day, REGION, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={server.access_key}/{scope}, "
                                f"SignedHeaders={names}, Signature={signature}")
    return headers


def _identities(path: Path) -> None:
    config = {"identities": [{"name": "medallion-test",
                              "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                              "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
    path.write_text(json.dumps(config))


def start_server(folder: Path | None = None, buckets: tuple[str, ...] = (BUCKET,),
                 timeout_s: float = 60.0) -> S3Server:
    """Start ``weed mini`` in ``folder`` (a new temporary one by default) with its S3 API on a free port, and
    create ``buckets``.

    Raises:
        EnvironmentSetupError: the binary is missing, or the server did not answer within ``timeout_s``.
    """
    binary = weed_binary()
    folder = folder or Path(tempfile.mkdtemp(prefix="medallion-s3-"))
    (folder / "data").mkdir(parents=True, exist_ok=True)
    _identities(folder / "s3.json")
    port = free_port()
    # Only what S3 needs: the WebDAV, admin UI, Iceberg and Lance listeners off, no telemetry; the master, volume
    # and filer ports are chosen by weed mini itself (it moves off ports that are taken).
    argv = [str(binary), "mini", f"-dir={folder / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            f"-s3.port={port}", f"-s3.config={folder / 's3.json'}", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-webdav=false", "-admin.ui=false", "-master.telemetry=false"]
    with open(folder / "server.log", "wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=folder,
                                   start_new_session=True)
    server = S3Server(folder, port, process)
    try:
        _wait_ready(server, buckets, timeout_s)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_ready(server: S3Server, buckets: tuple[str, ...], timeout_s: float) -> None:
    """Create the buckets as soon as the S3 API accepts them (it listens before its filer is ready)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if server.process.poll() is not None:
            raise EnvironmentSetupError(f"SeaweedFS exited with {server.process.returncode}: "
                                        f"{(server.folder / 'server.log').read_text(errors='replace')[-2000:]}")
        try:
            for bucket in buckets:
                server.create_bucket(bucket)
            return
        except (OSError, urllib.error.HTTPError) as exc:
            if time.monotonic() > deadline:
                raise EnvironmentSetupError(f"SeaweedFS did not serve S3 on port {server.port} within "
                                            f"{timeout_s:.0f} s ({exc}); see {server.folder / 'server.log'}"
                                            ) from exc
            time.sleep(0.3)


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """An S3 server for the test session, removed afterwards."""
    server = start_server()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.folder, ignore_errors=True)


@pytest.fixture
def s3_prefix(s3_server: S3Server) -> str:
    """A fresh folder of the test bucket for one test, ``s3a://<bucket>/<random>``."""
    return f"s3a://{BUCKET}/{uuid.uuid4().hex[:12]}"

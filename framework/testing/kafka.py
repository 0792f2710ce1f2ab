"""A throwaway Apache Kafka broker for tests and local development: Kafka's own server (KRaft, one node acting
as broker and controller) on 127.0.0.1, a free port and a temporary log folder, stopped at the end.

The server is Apache Kafka's, not a mock: its jars (``org.apache.kafka:kafka_2.13`` and its runtime
dependencies) come from Maven Central once, resolved by Maven (``mvn dependency:copy-dependencies`` on a small
pom) into ``~/.cache/medallion/kafka/<version>/`` (``$XDG_CACHE_HOME`` if set; ``$MEDALLION_KAFKA_LIBS`` names
another folder of jars): per user, like SeaweedFS's binary, and never on Spark's class path (Spark's connector
runs with the ``kafka-clients`` its own pom names, conf/spark.yaml). ``scripts/setup.sh`` fetches them
(``python -m framework.testing.kafka fetch``). Starting one takes 4-8 s on 2 cores: the storage is formatted
once (``kafka.tools.StorageTool format --standalone``, a JVM of its own), then ``kafka.Kafka server.properties``
runs until stopped; the broker is ready when it answers a metadata request.

Fixtures (registered by ``framework.testing.plugin``):

- ``kafka_broker``: one broker for the whole test session;
- ``kafka_topic``: a fresh topic (one partition) on it for one test.

Besides its PLAINTEXT listener, every broker has a SASL_PLAINTEXT one (mechanism PLAIN) with one user,
:data:`SASL_USER`, whose password is made for that broker (:attr:`KafkaBroker.sasl_password`, kept in its
folder): what a pipeline with ``kafka.security.protocol`` / ``kafka.sasl.*`` options connects to
(:meth:`KafkaBroker.sasl_options`).

For local use: ``medallion kafka start`` / ``medallion kafka stop`` (``framework.testing.kafka_cli``).
"""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from framework.errors import EnvironmentSetupError
from framework.testing.postgres import free_ports

KAFKA_VERSION = "4.3.1"
# slf4j 1.x (what kafka_2.13 4.3 names) binds to log4j2 through this one, so the broker's log is written
LOG_BINDING = "org.apache.logging.log4j:log4j-slf4j-impl:2.25.4"
_COPY_DEPENDENCIES = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies"
_COMPLETE = ".complete"  # written last: a folder without it is an interrupted fetch
# A small broker: its heap, a collector without concurrent threads, and the C1 compiler only (starts sooner;
# the broker's work here is copying bytes between sockets and files, not computing)
BROKER_JAVA_OPTIONS = ("-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                       "-Djava.awt.headless=true")
_LOG4J = """status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.file.ref = file
"""
SASL_USER = "medallion"
_PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def _cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "medallion" / "kafka"


def libs_dir(version: str = KAFKA_VERSION) -> Path:
    """The folder of the broker's jars: ``$MEDALLION_KAFKA_LIBS``, or the per-user cache of ``version``."""
    if os.environ.get("MEDALLION_KAFKA_LIBS"):
        return Path(os.environ["MEDALLION_KAFKA_LIBS"])
    return _cache_root() / version


def _pom(version: str) -> str:
    group, artifact, binding_version = LOG_BINDING.split(":")
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>medallion.local</groupId><artifactId>kafka-server</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>{version}</version></dependency>
    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId><version>{binding_version}</version></dependency>
  </dependencies>
</project>
"""


def fetch_server(version: str = KAFKA_VERSION) -> Path:
    """Resolve Kafka's server and its runtime dependencies from Maven Central into :func:`libs_dir` once (about
    45 jars, 45 MB, 10-30 s); milliseconds when they are there. Returns the folder.

    Raises:
        EnvironmentSetupError: no Maven, or Maven could not resolve them.
    """
    target = libs_dir(version)
    if (target / _COMPLETE).exists() or os.environ.get("MEDALLION_KAFKA_LIBS"):
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise EnvironmentSetupError("Maven (mvn) is needed once to fetch Apache Kafka's server jars: "
                                    "apt-get install maven")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        Path(work, "pom.xml").write_text(_pom(version))
        out = Path(work) / "libs"
        result = subprocess.run([mvn, "-B", "-q", _COPY_DEPENDENCIES, "-DincludeScope=runtime",
                                 f"-DoutputDirectory={out}"], cwd=work, capture_output=True, text=True,
                                check=False)
        if result.returncode != 0:
            raise EnvironmentSetupError(f"could not fetch org.apache.kafka:kafka_2.13:{version} from Maven "
                                        f"Central (mvn exit {result.returncode}):\n"
                                        f"{(result.stdout + result.stderr)[-2000:]}")
        (out / _COMPLETE).write_text(version + "\n")
        shutil.rmtree(target, ignore_errors=True)
        out.rename(target)
    return target


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java:
        raise EnvironmentSetupError("Java 17 is needed to run the Kafka broker (apt-get install openjdk-17-jdk-headless)")
    return java


def _cluster_id() -> str:
    """A KRaft cluster id as Kafka's ``Uuid.randomUuid`` makes one (URL-safe base64 of 16 random bytes, not
    starting with '-'), without starting a JVM for it."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@dataclass
class KafkaBroker:
    """A running (or stopped) single-node broker."""

    folder: Path
    port: int
    controller_port: int
    libs: Path
    sasl_port: int = 0
    sasl_password: str = field(default="", repr=False)
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def bootstrap_servers(self) -> str:
        """``host:port``, as ``kafka.bootstrap.servers`` takes it."""
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_bootstrap_servers(self) -> str:
        """``host:port`` of the SASL_PLAINTEXT listener."""
        return f"127.0.0.1:{self.sasl_port}"

    def sasl_jaas_config(self, password: str | None = None) -> str:
        """The ``sasl.jaas.config`` of :data:`SASL_USER` (with another ``password``: one the broker refuses)."""
        secret = self.sasl_password if password is None else password
        return f'{_PLAIN} required username="{SASL_USER}" password="{secret}";'

    def sasl_options(self, password: str | None = None) -> dict[str, str]:
        """The ``kafka.*`` options of a read or sink through the SASL_PLAINTEXT listener."""
        return {"kafka.bootstrap.servers": self.sasl_bootstrap_servers, "kafka.security.protocol": "SASL_PLAINTEXT",
                "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.jaas.config": self.sasl_jaas_config(password)}

    @property
    def log_file(self) -> Path:
        """The broker's log (warnings and errors)."""
        return self.folder / "broker.log"

    def start(self, timeout: float = 60.0) -> KafkaBroker:
        """Start the server (formatting its storage the first time) and wait until it serves metadata."""
        if self.process is not None and self.process.poll() is None:
            return self
        properties = self.folder / "server.properties"
        if not (self.folder / "data" / "meta.properties").exists():
            _write_config(self)
            _run_java(self, "kafka.tools.StorageTool", "format", "--standalone", "--ignore-formatted",
                      "-t", _cluster_id(), "-c", str(properties))
        with open(self.folder / "broker.out", "ab") as out:
            self.process = subprocess.Popen(
                [_java(), *BROKER_JAVA_OPTIONS, f"-Dlog4j2.configurationFile={self.folder / 'log4j2.properties'}",
                 "-cp", str(self.libs / "*"), "kafka.Kafka", str(properties)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        _wait_ready(self, timeout)
        return self

    def stop(self) -> None:
        """Stop the server (SIGTERM: a controlled shutdown, then SIGKILL after 20 s)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def create_topic(self, name: str, partitions: int = 1) -> str:
        """Create ``name`` (no error when it exists already); returns the name."""
        from kafka.admin import NewTopic
        from kafka.errors import TopicAlreadyExistsError

        with contextlib.closing(self.admin()) as admin, contextlib.suppress(TopicAlreadyExistsError):
            admin.create_topics([NewTopic(name, partitions, 1)], timeout_ms=30_000)
        return name

    def topics(self) -> set[str]:
        """The topics of the cluster (internal ones left out)."""
        with contextlib.closing(self.admin()) as admin:
            return {t for t in admin.list_topics() if not t.startswith("__")}

    def produce(self, topic: str, values: Iterable[str | bytes | None],
                keys: Iterable[str | bytes | None] | None = None) -> int:
        """Write ``values`` (with ``keys``, when given) to ``topic`` and wait until the broker has them all;
        returns how many."""
        from kafka import KafkaProducer

        producer = KafkaProducer(bootstrap_servers=self.bootstrap_servers, acks="all", linger_ms=5)
        count = 0
        try:
            for key, value in zip(keys if keys is not None else _nones(), values, strict=False):
                producer.send(topic, value=_bytes(value), key=_bytes(key))
                count += 1
            producer.flush(60)
        finally:
            producer.close()
        return count

    def consume(self, topic: str, *, idle_ms: int = 3000) -> list[tuple[bytes | None, bytes | None]]:
        """Every record of ``topic`` from the beginning, as ``(key, value)``, with a plain consumer (no group)."""
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(topic, bootstrap_servers=self.bootstrap_servers, auto_offset_reset="earliest",
                                 enable_auto_commit=False, group_id=None, consumer_timeout_ms=idle_ms)
        try:
            return [(record.key, record.value) for record in consumer]
        finally:
            consumer.close()

    def admin(self) -> Any:
        """A ``kafka.KafkaAdminClient`` on this broker (the caller closes it)."""
        from kafka import KafkaAdminClient

        return KafkaAdminClient(bootstrap_servers=self.bootstrap_servers, request_timeout_ms=30_000)


def _nones() -> Iterator[None]:
    while True:
        yield None


def _bytes(value: str | bytes | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


def _write_config(broker: KafkaBroker) -> None:
    data = broker.folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    sasl = f"SASL_PLAINTEXT://127.0.0.1:{broker.sasl_port}"
    lines = {
        "process.roles": "broker,controller", "node.id": "1",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{broker.controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{broker.port},CONTROLLER://127.0.0.1:{broker.controller_port},{sasl}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker.port},{sasl}",
        "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            f'{_PLAIN} required user_{SASL_USER}="{broker.sasl_password}";',
        "log.dirs": str(data), "num.partitions": "1", "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1", "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0", "log.flush.interval.messages": str(2**62),
    }
    (broker.folder / "server.properties").write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    (broker.folder / "log4j2.properties").write_text(_LOG4J.format(log=broker.log_file))


def _run_java(broker: KafkaBroker, main: str, *args: str) -> None:
    result = subprocess.run([_java(), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                             f"-Dlog4j2.configurationFile={broker.folder / 'log4j2.properties'}",
                             "-cp", str(broker.libs / "*"), main, *args],
                            capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise EnvironmentSetupError(f"Kafka's {main} failed (exit {result.returncode}): "
                                    f"{(result.stdout + result.stderr)[-1500:]}")


def _wait_ready(broker: KafkaBroker, timeout: float) -> None:
    """Wait until the broker accepts connections and answers a metadata request (its controller elected)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert broker.process is not None
        if broker.process.poll() is not None:
            raise EnvironmentSetupError(f"the Kafka broker exited (code {broker.process.returncode}) while "
                                        f"starting: {_tail(broker.folder / 'broker.out')}{_tail(broker.log_file)}")
        try:
            with socket.create_connection(("127.0.0.1", broker.port), timeout=1):
                pass
            broker.topics()
            return
        except Exception:  # not up yet: any connection or protocol error means "wait"
            time.sleep(0.2)
    broker.stop()
    raise EnvironmentSetupError(f"the Kafka broker did not become ready within {timeout:.0f} s: "
                                f"{_tail(broker.log_file)}")


def _tail(path: Path, size: int = 1500) -> str:
    return path.read_text(errors="replace")[-size:] if path.exists() else ""


def configured_ports(folder: Path) -> tuple[int, int] | None:
    """The broker and controller ports of a broker folder written before (its ``server.properties``), or None.
    A formatted KRaft log keeps its controller's address, so a restarted broker keeps both ports."""
    settings = _configured(folder)
    if settings is None or "PLAINTEXT" not in settings[0] or "CONTROLLER" not in settings[0]:
        return None
    return settings[0]["PLAINTEXT"], settings[0]["CONTROLLER"]


def _configured(folder: Path) -> tuple[dict[str, int], str] | None:
    """The listeners' ports (by name) and the SASL user's password of a folder's ``server.properties``."""
    try:
        lines = (folder / "server.properties").read_text().splitlines()
    except OSError:
        return None
    listeners = next((line.partition("=")[2] for line in lines if line.startswith("listeners=")), "")
    ports = {name: int(address.rpartition(":")[2]) for name, _, address in
             (item.partition("://") for item in listeners.split(",") if "://" in item)}
    jaas = next((line for line in lines if line.startswith("listener.name.sasl_plaintext.")), "")
    return ports, jaas.rpartition(f'user_{SASL_USER}="')[2].partition('"')[0]


def start_broker(folder: Path | None = None, port: int | None = None) -> KafkaBroker:
    """Start a broker with its log folder in ``folder`` (a new temporary one by default) on ``port`` (a free
    one by default; a folder used before keeps its ports and SASL password), fetching the server's jars first
    if needed."""
    libs = fetch_server()
    folder = folder or Path(tempfile.mkdtemp(prefix="medallion-kafka-"))
    folder.mkdir(parents=True, exist_ok=True)
    known = _configured(folder) if (folder / "data" / "meta.properties").exists() else None
    if known is not None and {"PLAINTEXT", "CONTROLLER"} <= known[0].keys():  # (a folder from before SASL: none)
        ports, password = known
        return KafkaBroker(folder, ports["PLAINTEXT"], ports["CONTROLLER"], libs, ports.get("SASL_PLAINTEXT", 0),
                           password).start()
    free = [p for p in free_ports(4) if p != port]
    return KafkaBroker(folder, port or free[2], free[0], libs, free[1], secrets.token_urlsafe(18)).start()


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[KafkaBroker]:
    """A Kafka broker for the test session, removed afterwards."""
    broker = start_broker()
    try:
        yield broker
    finally:
        broker.stop()
        shutil.rmtree(broker.folder, ignore_errors=True)


@pytest.fixture
def kafka_topic(kafka_broker: KafkaBroker) -> str:
    """A fresh topic with one partition for one test."""
    return kafka_broker.create_topic(f"t_{uuid.uuid4().hex[:10]}")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m framework.testing.kafka fetch``: fetch the server's jars (scripts/setup.sh)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv != ["fetch"]:
        print("usage: python -m framework.testing.kafka fetch", file=sys.stderr)
        return 2
    try:
        print(fetch_server())
    except EnvironmentSetupError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

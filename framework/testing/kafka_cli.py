"""``medallion kafka start|stop|status|topic``: Apache Kafka's own broker for local development.

``start`` runs one broker (framework.testing.kafka: KRaft, one node) on 127.0.0.1:9092 (``--port``) in the
background, its log folder under ``runs/kafka`` (``--dir``), kept across stops so that topics and their records
stay; ``stop`` ends it; ``topic NAME...`` creates topics (the broker creates none by itself, as most production
clusters); ``produce TOPIC [FILE...]`` writes each line of the files (or of standard input) as one record. ``status`` exits 1 when no broker of that folder runs. The pipeline's configuration names the broker
(``kafka.bootstrap.servers`` = ``127.0.0.1:9092``); on Databricks, the user's own brokers.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from framework.errors import EnvironmentSetupError
from framework.serve.paths import pid_alive

if TYPE_CHECKING:
    from framework.testing.kafka import KafkaBroker

DEFAULT_DIR = Path("runs/kafka")
DEFAULT_PORT = 9092
_STATE = "broker.json"


def add_parser(sub: Any) -> None:
    """The ``kafka`` subcommand of ``medallion``."""
    p = sub.add_parser("kafka", help="start or stop a local Apache Kafka broker (127.0.0.1:9092), create topics")
    p.add_argument("action", choices=("start", "stop", "status", "topic", "produce"))
    p.add_argument("topics", nargs="*", help="topic names (`topic`); for `produce`: the topic, then files of "
                   "one record value per line (default: standard input)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"broker port (default {DEFAULT_PORT})")
    p.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"log folder (default {DEFAULT_DIR})")
    p.add_argument("--partitions", type=int, default=1, help="partitions of new topics (default 1)")


def cmd_kafka(args: argparse.Namespace) -> int:
    """Run ``medallion kafka <action>``; return the exit code."""
    try:  # the test kit's module: pytest and kafka-python are development dependencies
        from framework.testing.kafka import fetch_server, start_broker
    except ImportError as exc:
        raise EnvironmentSetupError(f"`medallion kafka` needs the development dependencies ({exc.name} is "
                                    "missing): pip install -e '.[dev]' (make setup)") from None
    running = _running(args.dir)
    if args.action == "status":
        print(f"kafka: running at {running.bootstrap_servers} (pid {_pid(args.dir)})" if running
              else f"kafka: not running ({args.dir})")
        return 0 if running else 1
    if args.action == "stop":
        _stop(args.dir)
        return 0
    if args.action == "start":
        if running is None:
            fetch_server()
            running = start_broker(args.dir.resolve(), args.port)
            assert running.process is not None
            (args.dir / _STATE).write_text(json.dumps({"pid": running.process.pid, "port": running.port,
                                                       "controller_port": running.controller_port}))
        print(f"kafka: running at {running.bootstrap_servers} (log folder {args.dir}); stop it with "
              "`medallion kafka stop`")
        return 0
    if running is None:
        raise EnvironmentSetupError(f"no Kafka broker runs from {args.dir}: start one with `medallion kafka start`")
    if args.action == "produce":
        return _produce(running, args.topics)
    for topic in args.topics:
        running.create_topic(topic, args.partitions)
        print(f"kafka: topic {topic} on {running.bootstrap_servers}")
    return 0


def _produce(broker: KafkaBroker, names: list[str]) -> int:
    """``produce TOPIC [FILE...]``: every non-empty line of the files (or of standard input) as one record."""
    import sys

    if not names:
        raise EnvironmentSetupError("usage: medallion kafka produce TOPIC [FILE...] (lines of standard input "
                                    "without FILE)")
    topic, files = names[0], names[1:]
    lines = [line for path in files for line in Path(path).read_text().splitlines()] if files \
        else sys.stdin.read().splitlines()
    count = broker.produce(topic, [line for line in lines if line.strip()])
    print(f"kafka: {count} records to {topic} on {broker.bootstrap_servers}")
    return 0


def _state(folder: Path) -> dict[str, int] | None:
    try:
        return {k: int(v) for k, v in json.loads((folder / _STATE).read_text()).items()}
    except (OSError, ValueError):
        return None


def _pid(folder: Path) -> int | None:
    state = _state(folder)
    return state["pid"] if state else None




def _running(folder: Path) -> KafkaBroker | None:
    """The broker started from ``folder`` when its process still runs."""
    state = _state(folder)
    if state is None or not pid_alive(state["pid"]):
        return None
    from framework.testing.kafka import KafkaBroker, libs_dir

    return KafkaBroker(folder.resolve(), state["port"], state["controller_port"], libs_dir())


def _stop(folder: Path) -> None:
    pid = _pid(folder)
    if pid is None or not pid_alive(pid):
        print("kafka: not running")
        return
    os.kill(pid, signal.SIGTERM)  # a controlled shutdown
    deadline = time.monotonic() + 30
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
    (folder / _STATE).unlink(missing_ok=True)
    print("kafka: stopped")

"""A Spark standalone cluster on this machine, from PySpark's own scripts: one master, N workers, stopped with
every process it started (executors included: each daemon leads its own process group)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark

from framework.testing.postgres import free_ports

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


@dataclass
class StandaloneCluster:
    folder: Path
    port: int = 0
    web_port: int = 0
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not (self.port and self.web_port):
            self.port, self.web_port = free_ports(2)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def state(self) -> dict[str, Any]:
        """The master's JSON status page (workers, active and completed applications), on the port the master's
        log says its UI bound (Spark moves to the next port when the one asked for was taken meanwhile)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self._bound_web_port()}/json/", timeout=5) as response:
            return dict(json.load(response))

    def _bound_web_port(self) -> int:
        log = self.folder / "master.log"
        found = re.search(r"Successfully started service 'MasterUI' on port (\d+)",
                          log.read_text(errors="replace") if log.exists() else "")
        return int(found.group(1)) if found else self.web_port

    def start(self, workers: int = 2, cores: int = 1, memory: str = "1g", timeout: float = 90.0) -> None:
        self._spawn("master", [MASTER_CLASS, "--host", "127.0.0.1", "--port", str(self.port),
                               "--webui-port", str(self.web_port)])
        worker_ports = [p for p in free_ports(workers + 2) if p not in (self.port, self.web_port)][:workers]
        for number in range(workers):
            work = self.folder / f"worker-{number}"
            work.mkdir(parents=True, exist_ok=True)
            self._spawn(f"worker-{number}", [WORKER_CLASS, self.url, "--host", "127.0.0.1", "--cores", str(cores),
                                             "--memory", memory, "--work-dir", str(work),
                                             "--webui-port", str(worker_ports[number])])
        self.wait(lambda s: s.get("aliveworkers") == workers, timeout, f"{workers} workers registered")

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.folder / f"{name}.log", "wb")  # noqa: SIM115 - closed with the process's output
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_DAEMON_MEMORY": "512m"}
        process = subprocess.Popen([str(SPARK_CLASS), *argv], stdout=log, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
        log.close()
        self.processes.append(process)

    def wait(self, ready: Any, timeout: float, what: str) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.processes):
                raise RuntimeError(f"a cluster process exited early; logs in {self.folder}")
            try:
                last = self.state()
                if ready(last):
                    return last
            except (OSError, ValueError):  # not listening yet, or not the master's JSON page yet
                pass
            time.sleep(0.5)
        raise TimeoutError(f"cluster: not {what} after {timeout:.0f} s: {last}")

    def stop(self) -> None:
        """Stop every daemon and whatever it started (its process group), SIGKILL after 10 s."""
        for process in reversed(self.processes):
            _signal_group(process, signal.SIGTERM)
        for process in reversed(self.processes):
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
            _signal_group(process, signal.SIGKILL)
            process.wait()

    def leftovers(self, timeout: float = 20.0) -> list[str]:
        """The processes of the cluster's process groups still running after ``timeout`` seconds (killed
        processes take a moment to go; zombies, already dead, do not count)."""
        groups = {p.pid for p in self.processes}
        deadline = time.monotonic() + timeout
        while True:
            listing = subprocess.run(["ps", "-eo", "pgid=,stat=,args="], capture_output=True, text=True,
                                     check=True).stdout.splitlines()
            alive = [line.strip() for line in listing
                     if line.split() and int(line.split()[0]) in groups and not line.split()[1].startswith("Z")]
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.5)


def _signal_group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)

"""``medallion serve``: start the repository's warm server in the background and return once it listens;
``--stop`` and ``--status``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from framework.serve.client import ask, probe
from framework.serve.errors import ServeError
from framework.serve.paths import ServePaths, ensure_private_folder, pid_alive
from framework.serve.protocol import Kind

START_TIMEOUT_S = 600.0  # a cold JVM start on a busy 2-core machine takes up to a minute; set-up builds may run
STOP_TIMEOUT_S = 60.0


def start(paths: ServePaths, idle_timeout: float, warm_up: bool = True) -> int:
    """Start a detached server for ``paths`` (new session, output to its log) unless one runs; replace a
    crashed one. Prints where it listens. ``warm_up``: the server warms up (``framework/serve/warmup.py``).

    Returns:
        0 once the server listens (its SparkSession started), or if one was running already.

    Raises:
        ServeError: ``SERVE_START_FAILED``: the server exited before listening (the message ends with its
            log's last lines), or did not listen within :data:`START_TIMEOUT_S`.
    """
    found = probe(paths)
    if found.state == "running":
        print(f"medallion serve: already running (pid {found.pid}), listening on {paths.socket}")
        return 0
    if found.state == "stale":
        paths.remove_stale()
        print(f"medallion serve: replacing a server that is gone (pid {found.pid})")
    ensure_private_folder(paths.folder)
    if not paths.socket_path_fits():
        raise ServeError(f"the socket path {paths.socket} is too long for a Unix socket; run from a repository "
                         "with a shorter path", code="SERVE_SOCKET_PATH_TOO_LONG")
    log_fd = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "framework.cli", "serve", "--foreground", "--idle-timeout", str(idle_timeout),
             *([] if warm_up else ["--no-warm-up"])],
            cwd=paths.repo, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=subprocess.STDOUT,
            start_new_session=True, env={k: v for k, v in os.environ.items() if k != "MEDALLION_NO_SERVER"})
    finally:
        os.close(log_fd)
    _wait_ready(paths, process)
    print(f"medallion serve: listening on {paths.socket} (pid {process.pid}; stops after {idle_timeout:g} s "
          f"idle; log {paths.log})")
    return 0


def _wait_ready(paths: ServePaths, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServeError(f"the server exited with code {process.returncode} before listening; its log "
                             f"({paths.log}) ends with:\n{_tail(paths.log)}", code="SERVE_START_FAILED")
        if paths.socket.exists() and probe(paths).state == "running":
            return
        time.sleep(0.2)
    raise ServeError(f"the server (pid {process.pid}) did not listen within {START_TIMEOUT_S:g} s; see "
                     f"{paths.log}", code="SERVE_START_FAILED")


def stop(paths: ServePaths) -> int:
    """Stop the server of ``paths`` (interrupting a running command) and wait for its process to end.

    Returns:
        0, whether a server ran or not; 1 if it did not end within :data:`STOP_TIMEOUT_S`.
    """
    found = probe(paths)
    if found.state != "running":
        if found.state == "stale":
            paths.remove_stale()
        print(f"medallion serve: not running for {paths.repo}")
        return 0
    status = ask(paths, Kind.STOP)
    pid = int(status.get("pid") or found.pid or 0)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while pid and pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if pid and pid_alive(pid):
        print(f"medallion serve: pid {pid} did not stop within {STOP_TIMEOUT_S:g} s", file=sys.stderr)
        return 1
    print(f"medallion serve: stopped (pid {pid})")
    return 0


def status(paths: ServePaths) -> int:
    """Print whether the server of ``paths`` runs.

    Returns:
        0 if it runs, 1 if not.
    """
    found = probe(paths)
    if found.state != "running" or found.status is None:
        if found.state == "stale":
            paths.remove_stale()
        print(f"medallion serve: not running for {paths.repo}")
        return 1
    info = found.status
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(info.get("started", 0))))
    state = f"running `medallion {' '.join(info['command'])}`" if info.get("busy") else "idle"
    print(f"medallion serve: running (pid {info.get('pid')}) since {since}, listening on {paths.socket}; "
          f"{info.get('served', 0)} command(s) served, {state}; stops after {info.get('idle_timeout'):g} s idle")
    return 0


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"

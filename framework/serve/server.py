"""The warm server: one process per repository holding a started SparkSession, running one command at a time
for the command line (``medallion serve --foreground`` runs it; ``medallion serve`` starts it detached).

The main thread started the session and runs the commands, so a command runs where it would in-process and
Ctrl-C reaches it the same way: the accept thread sends SIGINT to the main thread, where PySpark's handler
cancels the running jobs and raises ``KeyboardInterrupt``; it also stops the active streaming queries until the
command has ended (a failed flow may retry). The accept thread answers every other connection meanwhile:
``PING``, ``STOP``, and ``BUSY`` to a second request.
"""

from __future__ import annotations

import fcntl
import json
import os
import queue
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any, NoReturn

from framework.serve.client import probe
from framework.serve.errors import ProtocolError, ServeError
from framework.serve.paths import ServePaths, ensure_private_folder
from framework.serve.protocol import Frame, FrameReader, Kind, Request, encode_json
from framework.serve.request import FrameSender, Handler, run_request
from framework.serve.warmup import WarmUp

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

STOP_WORK_EVERY_S = 0.5


class _Terminated(BaseException):
    """SIGTERM: leave the main loop (and any command) and clean up."""


@dataclass
class _Job:
    """A request being run, and its connection."""

    request: Request
    sock: socket.socket
    reader: FrameReader
    sender: FrameSender
    interrupted: bool = False
    finished: bool = False
    done: threading.Event = field(default_factory=threading.Event)


class Server:
    """The server of one repository (see the module docstring); :meth:`run` serves until stopped or idle."""

    def __init__(self, paths: ServePaths, idle_timeout: float, handler: Handler, warm_up: bool = True) -> None:
        self.paths = paths
        self.idle_timeout = idle_timeout
        self.handler = handler
        self.lock = threading.Lock()
        self.jobs: queue.Queue[_Job | None] = queue.Queue()
        self.active: _Job | None = None
        self.stop_requested = False
        self.stopping = threading.Event()
        self.started = time.time()
        self.served = 0
        self.spark: SparkSession | None = None
        self.listener: socket.socket | None = None
        self.warm_up = WarmUp(self._log) if warm_up else None

    def run(self) -> int:
        """Start the session, listen, serve until ``--stop``, SIGTERM or the idle timeout; returns 0.

        Raises:
            ServeError: ``SERVE_ALREADY_RUNNING`` (another server holds this repository) or
                ``SERVE_SOCKET_PATH_TOO_LONG``.
        """
        from framework.runner.session import get_or_create_session
        from framework.serve.session_state import SessionBaseline

        ensure_private_folder(self.paths.folder)
        pid_file = _lock_pid_file(self.paths)
        previous = signal.signal(signal.SIGTERM, _terminate)
        try:
            self.spark = get_or_create_session()
            import framework.runner.update  # noqa: F401 - imported once here, not by the first command
            baseline = SessionBaseline(self.spark)
            self.listener = _bind(self.paths)
            acceptor = threading.Thread(target=self._accept_loop, name="medallion-serve-accept", daemon=True)
            acceptor.start()
            self._log(f"ready: listening on {self.paths.socket} (idle timeout {self.idle_timeout:g} s)")
            self._warm(baseline)
            self._loop(baseline)
        except _Terminated:
            self._log("stopping: SIGTERM")
        finally:
            self._close(pid_file)
            signal.signal(signal.SIGTERM, previous)
        return 0

    def _warm(self, baseline: Any) -> None:
        """The warm-up updates (``framework/serve/warmup.py``), unless a command interrupts them."""
        if self.warm_up is None or self.spark is None:
            return
        with suppress(KeyboardInterrupt):  # the interrupt landed as the warm-up was ending
            self.warm_up.run(self.spark)
        try:
            baseline.restore()
        except KeyboardInterrupt:
            pass
        except Exception as exc:
            self._log(f"could not reset the session after the warm-up: {type(exc).__name__}: {exc}")

    def _loop(self, baseline: Any) -> None:
        last = time.monotonic()
        while True:
            try:
                job = self.jobs.get(timeout=max(0.05, self.idle_timeout - (time.monotonic() - last)))
            except queue.Empty:
                if time.monotonic() - last < self.idle_timeout:
                    continue
                with self.lock:  # decided under the lock, so that no request is accepted meanwhile
                    if self.active is None:
                        self.stop_requested = True
                        self._log(f"stopping: idle for {self.idle_timeout:g} s")
                        return
                continue
            except KeyboardInterrupt:  # a late Ctrl-C of a command that had already ended
                continue
            if job is None:
                self._log("stopping: medallion serve --stop")
                return
            self._run_job(job, baseline)
            last = time.monotonic()

    def _run_job(self, job: _Job, baseline: Any) -> None:
        code = 130
        try:
            self._log(f"request: medallion {' '.join(job.request.argv)} (in {job.request.cwd})")
            code = run_request(job.request, job.sender, self.handler, self.paths.repo)
        except KeyboardInterrupt:
            code = 130
        except Exception as exc:  # the server's own trouble; the command gets exit 1 and the server goes on
            self._log(f"request failed in the server: {type(exc).__name__}: {exc}")
            code = 1
        finally:
            with self.lock:
                job.finished = True
            job.sender.send(Kind.EXIT, json.dumps({"code": code}).encode())
            reset = time.monotonic()
            try:
                baseline.restore()
            except KeyboardInterrupt:
                pass
            except Exception as exc:
                self._log(f"could not reset the session: {type(exc).__name__}: {exc}")
            with self.lock:
                self.served += 1
                if self.active is job:
                    self.active = None
            job.done.set()
            self._log(f"exit {code} (session reset in {time.monotonic() - reset:.2f} s)")
            self._prepare_next()

    def _prepare_next(self) -> None:
        """What the next update would compute first, computed now that the command has its answer
        (``framework.runner.prewarm``), until a command arrives."""
        from framework.runner.prewarm import warm_written

        if self.spark is None:
            return
        started = time.monotonic()
        try:
            warmed = warm_written(self.spark, should_stop=lambda: not self.jobs.empty())
        except Exception as exc:  # an optimisation only
            self._log(f"could not prepare the next update: {type(exc).__name__}: {exc}")
            return
        if warmed:
            self._log(f"state of {warmed} tables written computed in {time.monotonic() - started:.2f} s")

    def status(self) -> dict[str, Any]:
        """What ``PING`` answers: pid, repository, socket, idle timeout, start time, commands served, busy."""
        active = self.active
        return {"pid": os.getpid(), "repo": str(self.paths.repo), "socket": str(self.paths.socket),
                "idle_timeout": self.idle_timeout, "started": self.started, "served": self.served,
                "busy": active is not None, "command": list(active.request.argv) if active else None,
                "stopping": self.stop_requested}

    def _accept_loop(self) -> None:
        assert self.listener is not None
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ, None)
        watched: list[_Job] = []  # connections of commands, closed here once their command is done
        last_stop = 0.0
        while not self.stopping.is_set():
            for done in [j for j in watched if j.done.is_set()]:
                with suppress(KeyError, ValueError):
                    selector.unregister(done.sock)
                done.sock.close()
                watched.remove(done)
            try:
                events = selector.select(timeout=0.2)
            except OSError:  # the listener was closed: the server is stopping
                return
            for key, _ in events:
                if key.data is not None:
                    self._on_client(key.data, selector)
                elif (accepted := self._accept()) is not None:
                    selector.register(accepted.sock, selectors.EVENT_READ, accepted)
                    watched.append(accepted)
            job = self.active
            if job is not None and job.interrupted and not job.finished and \
                    time.monotonic() - last_stop >= STOP_WORK_EVERY_S:
                last_stop = time.monotonic()
                self._stop_work()

    def _accept(self) -> _Job | None:
        """Answer a new connection; returns the job if it is a command that the main thread now runs."""
        assert self.listener is not None
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return None
        conn.settimeout(5.0)
        reader = FrameReader(conn)
        try:
            frame = reader.read() if _same_user(conn) else None
        except (OSError, ProtocolError):
            frame = None
        if frame is None:
            conn.close()
            return None
        try:
            return self._answer(conn, reader, frame)
        except (OSError, ProtocolError) as exc:
            self._log(f"a connection failed: {type(exc).__name__}: {exc}")
            conn.close()
            return None

    def _answer(self, conn: socket.socket, reader: FrameReader, frame: Frame) -> _Job | None:
        if frame.kind is not Kind.REQUEST:
            if frame.kind is Kind.STOP:
                self._request_stop()
            conn.sendall(encode_json(Kind.STATUS, self.status()))
            conn.close()
            return None
        request = Request.from_json(frame.json())
        with self.lock:
            # a command that has sent its exit code is done for its client: the next one queues behind its
            # session reset instead of being told the server is busy
            busy = (self.active is not None and not self.active.finished) or self.stop_requested
            job = None if busy else _Job(request, conn, reader, FrameSender(conn))
            self.active = job or self.active
        if job is None:
            conn.sendall(encode_json(Kind.BUSY, self.status()))
            conn.close()
            return None
        conn.settimeout(None)
        job.sender.send(Kind.ACCEPTED)
        self.jobs.put(job)
        if self.spark is not None:  # the next update's state, computed meanwhile, must not make it wait
            from framework.runner.prewarm import cancel_warming

            cancel_warming(self.spark)
        if self.warm_up is not None:
            self.warm_up.interrupt()
        return job

    def _on_client(self, job: _Job, selector: selectors.BaseSelector) -> None:
        """The client of the running command sent something: ``INTERRUPT``, or it went away (EOF)."""
        try:
            frame = job.reader.read()
        except (OSError, ProtocolError):
            frame = None
        if frame is None or frame.kind is Kind.INTERRUPT:
            with suppress(KeyError, ValueError):
                selector.unregister(job.sock)
            self._interrupt(job, "Ctrl-C in the client" if frame else "the client went away")

    def _interrupt(self, job: _Job, why: str) -> None:
        with self.lock:
            if job.finished or job.interrupted:
                return
            job.interrupted = True
            self._log(f"interrupting the command: {why}")
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    def _stop_work(self) -> None:
        """Stop the session's streaming queries and cancel its jobs (an interrupted command's flows)."""
        spark = self.spark
        if spark is None:
            return
        from framework.runner.streams import stop_active_queries

        stop_active_queries(spark)
        with suppress(Exception):
            spark.sparkContext.cancelAllJobs()

    def _request_stop(self) -> None:
        with self.lock:
            self.stop_requested = True
            job = self.active
        if job is not None:
            self._interrupt(job, "medallion serve --stop")
        self.jobs.put(None)

    def _close(self, pid_file: IO[str]) -> None:
        self.stopping.set()
        if self.listener is not None:
            self.listener.close()
            with suppress(FileNotFoundError):
                self.paths.socket.unlink()
        with suppress(FileNotFoundError):
            self.paths.pid.unlink()
        pid_file.close()
        if self.spark is not None:
            with suppress(Exception):
                self.spark.stop()
        self._log("stopped")

    def _log(self, message: str) -> None:
        stream = sys.__stderr__
        if stream is not None:
            stream.write(f"{datetime.now(UTC).isoformat(timespec='seconds')} medallion serve: {message}\n")
            stream.flush()


def serve(paths: ServePaths, idle_timeout: float, handler: Handler, warm_up: bool = True) -> int:
    """Run the server of ``paths`` in this process until it stops (``medallion serve --foreground``);
    ``warm_up``: warm up once listening (``framework/serve/warmup.py``).

    Raises:
        ServeError: Another server runs for this repository, or the socket path is too long.
    """
    if probe(paths).state == "running":
        raise ServeError(f"a server already runs for {paths.repo} ({paths.socket})", code="SERVE_ALREADY_RUNNING")
    return Server(paths, idle_timeout, handler, warm_up).run()


def _terminate(signum: int, frame: Any) -> NoReturn:
    raise _Terminated()


def _lock_pid_file(paths: ServePaths) -> IO[str]:
    """Open and lock the pid file for the server's life; a second server of the repository fails here."""
    handle = open(os.open(paths.pid, os.O_RDWR | os.O_CREAT, 0o600), "r+")  # noqa: SIM115 - held while serving
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise ServeError(f"another server is starting or running for {paths.repo}",
                         code="SERVE_ALREADY_RUNNING") from None
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def _bind(paths: ServePaths) -> socket.socket:
    """Listen on the repository's socket, created with mode 0600 (the umask is set around ``bind``)."""
    if not paths.socket_path_fits():
        raise ServeError(f"the socket path {paths.socket} is too long for a Unix socket; run from a repository "
                         "with a shorter path", code="SERVE_SOCKET_PATH_TOO_LONG")
    with suppress(FileNotFoundError):
        paths.socket.unlink()  # a crashed server's
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(os.fspath(paths.socket))
    finally:
        os.umask(old)
    os.chmod(paths.socket, 0o600)
    sock.listen(16)
    return sock


def _same_user(conn: socket.socket) -> bool:
    """Whether the peer runs as this user (Linux ``SO_PEERCRED``; elsewhere the 0700 folder decides)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return bool(uid == os.getuid())

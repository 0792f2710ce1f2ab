"""One request inside the server, run as the command would run in the client's process: its working directory
and environment, its output streamed back as it is written, the pipeline's own modules imported afresh, and no
secret kept once it ends.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from framework.redaction import SECRETS
from framework.serve.protocol import CHUNK, ENV_PREFIXES, Kind, Request, StreamInfo, encode

Handler = Callable[[list[str]], int]
"""Runs a command line in-process and returns its exit code (``framework.cli.run_in_process``)."""


class FrameSender:
    """Sends frames on one connection from any thread; once the peer is gone, sends nothing and remembers it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lock = threading.Lock()
        self.broken = False

    def send(self, kind: Kind, payload: bytes = b"") -> None:
        """Send one frame (several for a payload over :data:`~framework.serve.protocol.CHUNK`)."""
        with self.lock:
            if self.broken:
                return
            try:
                for start in range(0, max(len(payload), 1), CHUNK):
                    self.sock.sendall(encode(kind, payload[start:start + CHUNK]))
            except OSError:
                self.broken = True


class FrameStream:
    """A text stream that sends what is written as ``STDOUT`` or ``STDERR`` frames at once, encoded as the
    client's stream encodes (so the client writes the same bytes an in-process run would)."""

    def __init__(self, sender: FrameSender, kind: Kind, info: StreamInfo) -> None:
        self.sender = sender
        self.kind = kind
        self.info = info

    def write(self, text: str) -> int:
        """Send ``text``; returns its length."""
        if text:
            self.sender.send(self.kind, text.encode(self.info.encoding, self.info.errors))
        return len(text)

    def writelines(self, lines: Sequence[str]) -> None:
        """Send each of ``lines``."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Nothing to do: every write is sent at once."""

    def isatty(self) -> bool:
        """Whether the client's stream is a terminal."""
        return self.info.isatty

    def writable(self) -> bool:
        """Always True."""
        return True

    @property
    def encoding(self) -> str:
        """The client's stream encoding."""
        return self.info.encoding

    @property
    def errors(self) -> str:
        """The client's stream error handler."""
        return self.info.errors


def run_request(request: Request, sender: FrameSender, handler: Handler, repo: Path) -> int:
    """Run ``request`` with ``handler``; return its exit code. Raises only ``KeyboardInterrupt`` that landed
    outside the handler (the caller answers 130)."""
    drop_user_modules(repo, Path(request.cwd))
    SECRETS.clear()
    out = FrameStream(sender, Kind.STDOUT, request.stdout)
    err = FrameStream(sender, Kind.STDERR, request.stderr)
    try:
        with client_environment(request), redirected(out, err):
            try:
                return handler(list(request.argv))
            except SystemExit as exc:  # argparse: usage errors and --help, as in-process
                return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except KeyboardInterrupt:
                print("interrupted", file=sys.stderr)
                return 130
    finally:
        SECRETS.clear()  # values read with dbutils.secrets.get in this request are not kept for the next


@contextmanager
def redirected(out: FrameStream, err: FrameStream) -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` are ``out`` and ``err`` inside the block (threads included: one
    request runs at a time)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


@contextmanager
def client_environment(request: Request) -> Iterator[None]:
    """The client's working directory and its ``MEDALLION_*`` / ``DATABRICKS_SECRET_*`` variables (the server's
    own are hidden meanwhile) inside the block."""
    saved = {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)}
    for key in saved:
        del os.environ[key]
    os.environ.update(request.env)
    cwd = os.getcwd()
    try:
        os.chdir(request.cwd)
        yield
    finally:
        with suppress(OSError):
            os.chdir(cwd)
        for key in [k for k in os.environ if k.startswith(ENV_PREFIXES)]:
            del os.environ[key]
        os.environ.update(saved)


def drop_user_modules(*roots: Path) -> list[str]:
    """Forget every imported module whose file lies under one of ``roots`` but outside the framework package
    and any installed-packages folder, so that the next import of a pipeline's helper module reads its file
    again (edits take effect, as in a fresh process).

    Returns:
        The names of the modules dropped.
    """
    keep = tuple(_prefix(p) for p in (Path(__file__).resolve().parent.parent, *_installed_dirs()))
    folders = tuple(_prefix(root.resolve()) for root in roots)
    dropped = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or name == "__main__" or name.split(".")[0] == "framework":
            continue
        file = os.path.abspath(file)
        if file.startswith(folders) and not file.startswith(keep):
            del sys.modules[name]
            dropped.append(name)
    return dropped


def _prefix(folder: Path) -> str:
    return os.path.join(str(folder), "")


def _installed_dirs() -> list[Path]:
    """Where installed packages live (a virtualenv is often inside the repository)."""
    import site
    import sysconfig

    found = {sysconfig.get_paths()[key] for key in ("purelib", "platlib", "stdlib", "platstdlib")}
    found.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    found.update({sys.prefix, sys.base_prefix, sys.exec_prefix})
    return [Path(p).resolve() for p in found if p]

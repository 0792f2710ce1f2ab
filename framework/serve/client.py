"""The command line's side of the warm engine: hand a command to the repository's server and replay what it
writes, byte for byte, then exit with its exit code. Returns None (run in-process) when no server runs.

A second command while the server runs one waits for it (one line on stderr says so): running it in-process
instead would start a second JVM next to the busy one on the same cores, slower than waiting for a warm update.
"""

from __future__ import annotations

import codecs
import os
import socket
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, TextIO

from framework.serve.errors import ProtocolError
from framework.serve.paths import ServePaths, pid_alive
from framework.serve.protocol import (
    ENV_PREFIXES,
    Frame,
    FrameReader,
    Kind,
    Request,
    StreamInfo,
    encode,
    encode_json,
)

ACCEPT_TIMEOUT_S = 30.0  # the server answers a request at once from its accept thread, busy or not
BUSY_POLL_S = 0.5


def connect(paths: ServePaths, timeout: float | None = ACCEPT_TIMEOUT_S) -> socket.socket:
    """A connection to the server of ``paths``.

    Raises:
        ConnectionRefusedError: The socket file is there but no process listens on it (a crashed server).
        FileNotFoundError: There is no socket file.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(os.fspath(paths.socket))
    except BaseException:
        sock.close()
        raise
    return sock


def ask(paths: ServePaths, kind: Kind) -> dict[str, Any]:
    """Send ``PING`` or ``STOP`` and return the server's ``STATUS`` (see :func:`connect` for the errors)."""
    with connect(paths) as sock:
        sock.sendall(encode(kind))
        frame = FrameReader(sock).read()
    if frame is None or frame.kind is not Kind.STATUS:
        raise ProtocolError(f"expected a STATUS frame, got {frame.kind.name if frame else 'nothing'}")
    status = frame.json()
    return status if isinstance(status, dict) else {}


@dataclass(frozen=True)
class ServerState:
    """What :func:`probe` found: ``running`` (with its status), ``stale`` (files of a dead server) or ``none``."""

    state: str
    pid: int | None = None
    status: dict[str, Any] | None = None


def probe(paths: ServePaths) -> ServerState:
    """Whether a server runs for ``paths``, is gone and left its files behind, or was never started."""
    pid = paths.read_pid()
    if not paths.socket.exists():
        stale = pid is not None and not pid_alive(pid)  # an alive pid without a socket is a server starting up
        return ServerState("stale" if stale else "none", pid)
    try:
        status = ask(paths, Kind.PING)
    except (ConnectionRefusedError, FileNotFoundError):
        return ServerState("stale", pid)
    except (OSError, ProtocolError):
        return ServerState("none", pid)  # alive but not answering: leave it alone
    return ServerState("running", status.get("pid", pid), status)


def forward(argv: Sequence[str], paths: ServePaths | None = None) -> int | None:
    """Run ``medallion <argv>`` on the repository's server.

    Returns:
        The command's exit code, or None when no server runs (the caller runs the command in-process). A
        crashed server's files are removed, with one line on stderr.
    """
    paths = paths or ServePaths.for_cwd()
    if not paths.socket_path_fits():
        return None
    request = Request(tuple(argv), os.getcwd(), {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)},
                      _stream_info(sys.stdout), _stream_info(sys.stderr))
    told_busy = False
    while True:
        sock = _open(paths)
        if sock is None:
            return None
        with sock:
            reader = FrameReader(sock)  # one reader per connection: it may hold the frames after the first
            first = _first_answer(sock, reader, request)
            if first is None:
                print(f"medallion: the warm server ({paths.socket}) does not answer; running in-process",
                      file=sys.stderr)
                return None
            if first.kind is Kind.BUSY:
                if first.json().get("stopping"):
                    return None
                if not told_busy:
                    print("medallion: the warm server is running another command; waiting for it "
                          "(MEDALLION_NO_SERVER=1 runs in-process)", file=sys.stderr)
                    told_busy = True
                time.sleep(BUSY_POLL_S)
                continue
            if first.kind is not Kind.ACCEPTED:
                raise ProtocolError(f"expected ACCEPTED or BUSY, got {first.kind.name}")
            return _replay(sock, reader, paths)


def _open(paths: ServePaths) -> socket.socket | None:
    """A connection to a running server; None if there is none (removing a crashed one's files, with a line)."""
    if not paths.socket.exists():
        pid = paths.read_pid()
        if pid is not None and not pid_alive(pid):
            _stale(paths, pid)
        return None
    try:
        return connect(paths)
    except (ConnectionRefusedError, FileNotFoundError):
        _stale(paths, paths.read_pid())
    except OSError as exc:
        print(f"medallion: cannot reach the warm server ({exc}); running in-process", file=sys.stderr)
    return None


def _stale(paths: ServePaths, pid: int | None) -> None:
    paths.remove_stale()
    who = f" (pid {pid})" if pid is not None else ""
    print(f"medallion: the warm server{who} is gone; running in-process (removed its stale files in "
          f"{paths.folder})", file=sys.stderr)


def _first_answer(sock: socket.socket, reader: FrameReader, request: Request) -> Frame | None:
    try:
        sock.sendall(encode_json(Kind.REQUEST, request.to_json()))
        frame = reader.read()
    except (OSError, ProtocolError):
        return None
    sock.settimeout(None)
    return frame


def _replay(sock: socket.socket, reader: FrameReader, paths: ServePaths) -> int:
    """Write the server's output frames as they come; Ctrl-C once interrupts the command on the server (which
    then exits 130 as in-process), twice gives up waiting for it."""
    out, err = _sink(sys.stdout), _sink(sys.stderr)
    interrupted = False
    while True:
        try:
            frame = reader.read()
            if frame is None:
                print(f"medallion: the warm server stopped during the command (its log: {paths.log})",
                      file=sys.stderr)
                return 1
            if frame.kind is Kind.EXIT:
                return int(frame.json()["code"])
            (out if frame.kind is Kind.STDOUT else err)(frame.payload)
        except KeyboardInterrupt:
            if interrupted:
                print("interrupted", file=sys.stderr)
                return 130
            interrupted = True
            with suppress(OSError):
                sock.sendall(encode(Kind.INTERRUPT))
        except (OSError, ProtocolError, KeyError, ValueError) as exc:
            print(f"medallion: lost the warm server during the command: {exc} (its log: {paths.log})",
                  file=sys.stderr)
            return 1


def _stream_info(stream: TextIO) -> StreamInfo:
    return StreamInfo(str(getattr(stream, "encoding", None) or "utf-8"),
                      str(getattr(stream, "errors", None) or "strict"), bool(stream.isatty()))


def _sink(stream: TextIO) -> Callable[[bytes], None]:
    """A function that writes bytes to ``stream``'s binary buffer at once (unwrapping a redacting stream:
    the server redacted them already), or decodes them into ``stream`` if it has no buffer."""
    stream.flush()
    inner: Any = stream
    while getattr(inner, "target", None) is not None and not hasattr(inner, "buffer"):
        inner = inner.target
    buffer = getattr(inner, "buffer", None)
    if buffer is not None:
        def write_bytes(data: bytes) -> None:
            buffer.write(data)
            buffer.flush()
        return write_bytes
    decoder = codecs.getincrementaldecoder(str(getattr(inner, "encoding", None) or "utf-8"))(errors="replace")

    def write_text(data: bytes) -> None:
        inner.write(decoder.decode(data))
        inner.flush()
    return write_text

"""Framed messages between the ``medallion`` command line and its warm server, over a Unix stream socket.

A frame is one byte of kind, a 4-byte big-endian payload length, and the payload. The client opens a connection
with one of ``REQUEST`` (JSON: argv, cwd, environment, its output streams), ``PING`` or ``STOP``. To a request the
server answers ``BUSY`` (it runs another one; JSON status) or ``ACCEPTED``, then ``STDOUT`` and ``STDERR`` frames
as the command writes (bytes, in the client's encoding) and one ``EXIT`` (JSON ``{"code": n}``). While a request
runs the client may send ``INTERRUPT`` (Ctrl-C). ``PING`` and ``STOP`` are answered with one ``STATUS`` (JSON).
Everything here is pure: it is tested without a server (``tests/unit/test_serve_protocol.py``).
"""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from framework.serve.errors import ProtocolError

HEADER = struct.Struct(">cI")
MAX_PAYLOAD = 16 * 1024 * 1024  # far above any command's output chunk; a corrupt length fails fast
CHUNK = 64 * 1024  # large writes are sent as several frames
ENV_PREFIXES = ("DATABRICKS_SECRET_", "MEDALLION_")  # what a request carries of the client's environment


class Kind(Enum):
    """What a frame carries."""

    REQUEST = b"Q"
    PING = b"P"
    STOP = b"S"
    STATUS = b"T"
    BUSY = b"B"
    ACCEPTED = b"A"
    STDOUT = b"O"
    STDERR = b"E"
    EXIT = b"X"
    INTERRUPT = b"I"


_KINDS = {kind.value: kind for kind in Kind}


@dataclass(frozen=True)
class Frame:
    """One message: its kind and payload."""

    kind: Kind
    payload: bytes = b""

    def json(self) -> Any:
        """The payload decoded as JSON.

        Raises:
            ProtocolError: The payload is not UTF-8 JSON.
        """
        try:
            return json.loads(self.payload.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ProtocolError(f"a {self.kind.name} frame holds no valid JSON: {exc}") from None


def encode(kind: Kind, payload: bytes = b"") -> bytes:
    """The bytes of one frame.

    Raises:
        ProtocolError: The payload is larger than :data:`MAX_PAYLOAD`.
    """
    if len(payload) > MAX_PAYLOAD:
        raise ProtocolError(f"a {kind.name} frame of {len(payload)} bytes is over the {MAX_PAYLOAD}-byte limit")
    return HEADER.pack(kind.value, len(payload)) + payload


def encode_json(kind: Kind, value: Any) -> bytes:
    """The bytes of one frame whose payload is ``value`` as UTF-8 JSON."""
    return encode(kind, json.dumps(value, ensure_ascii=False).encode("utf-8"))


class FrameDecoder:
    """Turns a byte stream, fed in pieces of any size, back into frames."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        """Add ``data``; return every frame now complete, in order.

        Raises:
            ProtocolError: An unknown kind or a length over :data:`MAX_PAYLOAD`.
        """
        self._buffer += data
        frames = []
        while len(self._buffer) >= HEADER.size:
            raw_kind, length = HEADER.unpack_from(self._buffer)
            kind = _KINDS.get(raw_kind)
            if kind is None:
                raise ProtocolError(f"unknown frame kind {raw_kind!r}")
            if length > MAX_PAYLOAD:
                raise ProtocolError(f"a {kind.name} frame announces {length} bytes, over the {MAX_PAYLOAD} limit")
            end = HEADER.size + length
            if len(self._buffer) < end:
                break
            frames.append(Frame(kind, bytes(self._buffer[HEADER.size:end])))
            del self._buffer[:end]
        return frames

    @property
    def pending(self) -> int:
        """Bytes received that do not make a whole frame yet."""
        return len(self._buffer)


class FrameReader:
    """Reads frames from a connected socket, one at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._decoder = FrameDecoder()
        self._ready: list[Frame] = []

    def read(self) -> Frame | None:
        """The next frame; None when the peer closed the connection between two frames.

        Raises:
            ProtocolError: The peer closed the connection inside a frame, or sent a malformed one.
            OSError: The socket failed (``TimeoutError`` after the socket's timeout).
        """
        while not self._ready:
            data = self.sock.recv(CHUNK)
            if not data:
                if self._decoder.pending:
                    raise ProtocolError(f"the connection closed inside a frame ({self._decoder.pending} bytes)")
                return None
            self._ready.extend(self._decoder.feed(data))
        return self._ready.pop(0)


@dataclass(frozen=True)
class StreamInfo:
    """How the client's stdout or stderr takes text: the server writes for it as the client would."""

    encoding: str = "utf-8"
    errors: str = "strict"
    isatty: bool = False


@dataclass(frozen=True)
class Request:
    """One command for the server to run as if it ran in the client's process."""

    argv: tuple[str, ...]
    cwd: str
    env: Mapping[str, str] = field(default_factory=dict)
    stdout: StreamInfo = StreamInfo()
    stderr: StreamInfo = StreamInfo()

    def to_json(self) -> dict[str, Any]:
        """The request as a JSON object."""
        return {"argv": list(self.argv), "cwd": self.cwd, "env": dict(self.env),
                "stdout": vars(self.stdout), "stderr": vars(self.stderr)}

    @classmethod
    def from_json(cls, value: Any) -> Request:
        """The request in a JSON object; only environment variables of :data:`ENV_PREFIXES` are kept.

        Raises:
            ProtocolError: A field is missing or of the wrong type.
        """
        try:
            argv, cwd, env = value["argv"], value["cwd"], value.get("env", {})
            if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv) and isinstance(cwd, str)
                    and isinstance(env, dict) and all(isinstance(v, str) for v in env.values())):
                raise TypeError("argv must be a list of strings, cwd a string, env an object of strings")
            streams = [StreamInfo(**value.get(name, {})) for name in ("stdout", "stderr")]
        except (KeyError, TypeError, AttributeError) as exc:
            raise ProtocolError(f"malformed request: {type(exc).__name__}: {exc}") from None
        kept = {k: v for k, v in env.items() if k.startswith(ENV_PREFIXES)}
        return cls(tuple(argv), cwd, kept, streams[0], streams[1])

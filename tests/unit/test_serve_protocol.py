"""The warm engine's framing, request and client side, without a server process or Spark: frames round-trip
through any split of the byte stream, malformed input fails with a code, the server-side text streams write the
client's bytes, and the client replays a peer's frames byte for byte, waits while it is busy and falls back when
the server is gone."""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from framework.serve.client import forward, probe
from framework.serve.errors import ProtocolError
from framework.serve.paths import ServePaths, ensure_private_folder, repository_root
from framework.serve.protocol import (
    CHUNK,
    HEADER,
    MAX_PAYLOAD,
    Frame,
    FrameDecoder,
    FrameReader,
    Kind,
    Request,
    StreamInfo,
    encode,
    encode_json,
)
from framework.serve.request import FrameSender, FrameStream, client_environment, drop_user_modules


def test_every_kind_round_trips_through_any_split() -> None:
    frames = [Frame(kind, f"payload of {kind.name} é".encode()) for kind in Kind] + [Frame(Kind.INTERRUPT)]
    data = b"".join(encode(f.kind, f.payload) for f in frames)
    for size in (1, 2, 5, 7, len(data)):
        decoder = FrameDecoder()
        out: list[Frame] = []
        for start in range(0, len(data), size):
            out += decoder.feed(data[start:start + size])
        assert out == frames
        assert decoder.pending == 0


def test_a_partial_frame_waits_for_the_rest() -> None:
    decoder = FrameDecoder()
    data = encode(Kind.STDOUT, b"hello")
    assert decoder.feed(data[:-1]) == []
    assert decoder.pending == len(data) - 1
    assert decoder.feed(data[-1:]) == [Frame(Kind.STDOUT, b"hello")]


def test_malformed_frames_fail_with_a_code() -> None:
    with pytest.raises(ProtocolError) as unknown:
        FrameDecoder().feed(HEADER.pack(b"Z", 0))
    assert unknown.value.code == "SERVE_PROTOCOL_ERROR"
    with pytest.raises(ProtocolError, match="over the"):
        FrameDecoder().feed(HEADER.pack(Kind.STDOUT.value, MAX_PAYLOAD + 1))
    with pytest.raises(ProtocolError):
        encode(Kind.STDOUT, b"x" * (MAX_PAYLOAD + 1))
    with pytest.raises(ProtocolError, match="no valid JSON"):
        Frame(Kind.EXIT, b"{not json").json()


def test_reader_tells_a_clean_close_from_a_cut_frame() -> None:
    a, b = socket.socketpair()
    with a, b:
        a.sendall(encode_json(Kind.EXIT, {"code": 3}))
        a.shutdown(socket.SHUT_WR)
        reader = FrameReader(b)
        assert reader.read() == Frame(Kind.EXIT, b'{"code": 3}')
        assert reader.read() is None
    a, b = socket.socketpair()
    with a, b:
        a.sendall(encode(Kind.STDOUT, b"abcdef")[:-2])
        a.shutdown(socket.SHUT_WR)
        with pytest.raises(ProtocolError, match="inside a frame"):
            FrameReader(b).read()


def test_request_round_trips_and_keeps_only_its_environment() -> None:
    request = Request(("run", "conf/x.yaml"), "/somewhere", {"MEDALLION_DEBUG": "1", "DATABRICKS_SECRET_A_B": "s"},
                      StreamInfo("latin-1", "replace", True), StreamInfo())
    assert Request.from_json(json.loads(json.dumps(request.to_json()))) == request
    raw = {**request.to_json(), "env": {"MEDALLION_X": "1", "HOME": "/root", "PATH": "/bin"}}
    assert dict(Request.from_json(raw).env) == {"MEDALLION_X": "1"}
    for broken in ({"cwd": "/"}, {"argv": "run", "cwd": "/"}, {"argv": ["run"], "cwd": "/", "env": {"A": 1}},
                   {"argv": ["run"], "cwd": "/", "stdout": {"colour": True}}):
        with pytest.raises(ProtocolError) as exc:
            Request.from_json(broken)
        assert exc.value.code == "SERVE_PROTOCOL_ERROR"


def test_frame_stream_sends_the_clients_bytes_in_chunks() -> None:
    a, b = socket.socketpair()
    with a, b:
        sender = FrameSender(a)
        FrameStream(sender, Kind.STDERR, StreamInfo("latin-1", "replace")).write("café ✓\n")
        big = "x" * (CHUNK + 10)
        FrameStream(sender, Kind.STDOUT, StreamInfo()).write(big)
        a.shutdown(socket.SHUT_WR)
        reader = FrameReader(b)
        frames = []
        while (frame := reader.read()) is not None:
            frames.append(frame)
    assert frames[0] == Frame(Kind.STDERR, "café ?\n".encode("latin-1"))
    assert [len(f.payload) for f in frames[1:]] == [CHUNK, 10]
    assert b"".join(f.payload for f in frames[1:]) == big.encode()


def test_sender_survives_a_client_that_went_away() -> None:
    a, b = socket.socketpair()
    b.close()
    with a:
        sender = FrameSender(a)
        sender.send(Kind.STDOUT, b"x" * 100_000)
        sender.send(Kind.EXIT, b"{}")
    assert sender.broken


def test_client_environment_is_the_clients_and_goes_away(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEDALLION_SERVER_OWN", "server")
    monkeypatch.delenv("DATABRICKS_SECRET_S_K", raising=False)
    cwd = os.getcwd()
    request = Request(("state",), str(tmp_path), {"DATABRICKS_SECRET_S_K": "v"})
    with client_environment(request):
        assert os.environ["DATABRICKS_SECRET_S_K"] == "v"
        assert "MEDALLION_SERVER_OWN" not in os.environ
        assert os.getcwd() == str(tmp_path.resolve())
    assert "DATABRICKS_SECRET_S_K" not in os.environ
    assert os.environ["MEDALLION_SERVER_OWN"] == "server"
    assert os.getcwd() == cwd


def test_user_modules_are_dropped_and_framework_modules_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "helper_for_serve_test.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import helper_for_serve_test  # type: ignore[import-not-found]

    assert helper_for_serve_test.VALUE == 1
    framework_root = Path(__file__).resolve().parents[2]
    dropped = drop_user_modules(tmp_path, framework_root)
    assert "helper_for_serve_test" in dropped
    assert "helper_for_serve_test" not in sys.modules
    assert "framework.serve.request" in sys.modules and not any(n.startswith("framework") for n in dropped)
    assert "pytest" in sys.modules  # installed packages stay, even when the virtualenv is inside the repository


def test_repository_root_and_private_folder(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "a" / "b").mkdir(parents=True)
    assert repository_root(tmp_path / "repo" / "a" / "b") == (tmp_path / "repo").resolve()
    assert repository_root(tmp_path) == tmp_path.resolve()
    folder = tmp_path / "repo" / ".medallion"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    ensure_private_folder(folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert not ServePaths(Path("/" + "x" * 120)).socket_path_fits()


# --- the client against a peer that speaks the protocol (a thread, no Spark) -----------------------------------

Peer = Callable[[socket.socket, Frame], None]


@pytest.fixture
def listening(tmp_path: Path) -> Iterator[Callable[[Peer], ServePaths]]:
    """Start a one-thread peer on a repository's socket; each connection is answered by the given function."""
    sockets: list[socket.socket] = []

    def start(answer: Peer) -> ServePaths:
        paths = ServePaths(tmp_path)
        ensure_private_folder(paths.folder)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(os.fspath(paths.socket))
        server.listen(4)
        sockets.append(server)

        def loop() -> None:
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                with conn:
                    frame = FrameReader(conn).read()
                    assert frame is not None
                    answer(conn, frame)

        threading.Thread(target=loop, daemon=True).start()
        return paths

    yield start
    for server in sockets:
        server.close()


def test_client_replays_output_byte_for_byte(listening: Callable[[Peer], ServePaths],
                                            capfdbinary: pytest.CaptureFixture[bytes]) -> None:
    seen: list[Request] = []

    def answer(conn: socket.socket, frame: Frame) -> None:
        seen.append(Request.from_json(frame.json()))
        conn.sendall(encode(Kind.ACCEPTED) + encode(Kind.STDOUT, b"caf\xc3") + encode(Kind.STDERR, b"warn\n")
                     + encode(Kind.STDOUT, b"\xa9 \xff\n") + encode_json(Kind.EXIT, {"code": 7}))

    paths = listening(answer)
    assert forward(["validate", "x.yaml"], paths) == 7
    out, err = capfdbinary.readouterr()
    assert out == b"caf\xc3\xa9 \xff\n" and err == b"warn\n"
    assert seen[0].argv == ("validate", "x.yaml") and seen[0].cwd == os.getcwd()


def test_client_waits_while_the_server_is_busy(listening: Callable[[Peer], ServePaths],
                                              capfd: pytest.CaptureFixture[str]) -> None:
    answers = iter([encode_json(Kind.BUSY, {"busy": True}), encode_json(Kind.BUSY, {"busy": True}),
                    encode(Kind.ACCEPTED) + encode_json(Kind.EXIT, {"code": 0})])
    paths = listening(lambda conn, frame: conn.sendall(next(answers)))
    assert forward(["state", "x.yaml"], paths) == 0
    assert capfd.readouterr().err.count("running another command; waiting") == 1


def test_client_falls_back_when_the_server_stops(listening: Callable[[Peer], ServePaths]) -> None:
    paths = listening(lambda conn, frame: conn.sendall(encode_json(Kind.BUSY, {"stopping": True})))
    assert forward(["run", "x.yaml"], paths) is None


def test_a_crashed_server_is_noticed_and_its_files_removed(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    paths = ServePaths(tmp_path)
    ensure_private_folder(paths.folder)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(os.fspath(paths.socket))  # bound, never listening, then closed: what a killed server leaves
    dead.close()
    paths.pid.write_text("999999999\n")
    assert probe(paths).state == "stale"
    assert forward(["run", "x.yaml"], paths) is None
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "pid 999999999" in err and "running in-process" in err
    assert not paths.socket.exists() and not paths.pid.exists()
    assert forward(["run", "x.yaml"], paths) is None
    assert capfd.readouterr().err == ""  # nothing left to notice
    assert probe(paths).state == "none"

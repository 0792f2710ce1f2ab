"""Secret redaction (issue 19): the registry, split writes, nested structures, threads, exceptions."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
from collections import namedtuple
from collections.abc import Iterator
from datetime import datetime

import pytest

from framework import redaction
from framework.redaction import (
    REDACTED,
    RedactingStream,
    SecretRegistry,
    redact,
    redact_exception_text,
    redact_value,
    redacted_output,
    register_secret,
)
from tests.conftest import REPO_ROOT


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    """The process-wide registry as it was before the test (other tests may have read secrets)."""
    saved = redaction.SECRETS.values()
    redaction.SECRETS.clear()
    yield
    redaction.SECRETS.clear()
    for value in saved:
        redaction.SECRETS.register(value)


# ------------------------------------------------------------------------------------------------------ registry
def test_nothing_registered_leaves_text_alone() -> None:
    assert redact("password=hunter2") == "password=hunter2"
    registry = SecretRegistry()
    registry.register("")
    assert registry.values() == frozenset() and registry.redact("abc") == "abc"


def test_every_occurrence_is_replaced() -> None:
    register_secret("hunter2")
    assert redact("pw=hunter2; again hunter2hunter2") == f"pw={REDACTED}; again {REDACTED}{REDACTED}"
    assert redact("hunter") == "hunter"  # a part of the literal is not the literal (as on Databricks)


def test_longest_secret_wins_over_one_it_contains() -> None:
    register_secret("abc1")
    register_secret("abc1-extended")
    assert redact("x abc1-extended y abc1 z") == f"x {REDACTED} y {REDACTED} z"
    assert "extended" not in redact("abc1-extended")


def test_short_values_are_redacted_too() -> None:
    """Databricks documents no minimum length: a 1-character secret is a secret."""
    register_secret("7")
    assert redact("a7b77") == f"a{REDACTED}b{REDACTED}{REDACTED}"


def test_escaped_forms_are_redacted() -> None:
    secret = 'p"a\\ss\nwörd'
    register_secret(secret)
    assert redact(json.dumps({"v": secret})) == json.dumps({"v": REDACTED})
    assert redact(json.dumps({"v": secret}, ensure_ascii=False)) == '{"v": "' + REDACTED + '"}'
    assert redact(f"bad value {secret!r}") == f"bad value '{REDACTED}'"
    assert redact(secret) == REDACTED


def test_regex_characters_in_secrets_are_literal() -> None:
    register_secret("a.b*c")
    assert redact("aXbbbc a.b*c") == f"aXbbbc {REDACTED}"


def test_registration_is_thread_safe() -> None:
    registry = SecretRegistry()
    values = [f"secret-{i:04d}" for i in range(400)]
    threads = [threading.Thread(target=lambda chunk=values[i::8]: [registry.register(v) for v in chunk])
               for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert registry.values() == frozenset(values)
    assert registry.redact(" ".join(values)) == " ".join([REDACTED] * len(values))


# ---------------------------------------------------------------------------------------------------- structures
def test_redact_value_walks_nested_structures() -> None:
    register_secret("s3cr3t-token")
    when = datetime(2024, 1, 1)
    Row = namedtuple("Row", "name value")
    event = {
        "message": "connecting with s3cr3t-token",
        "timestamp": when, "seq": 3, "ok": True, "none": None,
        "error": {"exceptions": [{"message": "auth failed for s3cr3t-token", "class_name": "ValueError"}]},
        "details": json.dumps({"flow_progress": {"url": "jdbc://u:s3cr3t-token@h"}}),
        "s3cr3t-token": ("a", "s3cr3t-token"),
        "row": Row("n", "s3cr3t-token"),
    }
    out = redact_value(event)
    assert "s3cr3t-token" not in repr(out)
    assert out["message"] == f"connecting with {REDACTED}"
    assert out["error"]["exceptions"][0]["message"] == f"auth failed for {REDACTED}"
    assert json.loads(out["details"])["flow_progress"]["url"] == f"jdbc://u:{REDACTED}@h"
    assert out[REDACTED] == ("a", REDACTED)
    assert out["row"] == Row("n", REDACTED) and isinstance(out["row"], Row)
    assert out["timestamp"] is when and out["seq"] == 3 and out["ok"] is True and out["none"] is None
    assert event["message"] == "connecting with s3cr3t-token"  # the input is not modified


def test_redact_value_without_secrets_returns_the_same_object() -> None:
    event = {"message": "m"}
    assert redact_value(event) is event


# -------------------------------------------------------------------------------------------------------- stream
def test_stream_redacts_a_secret_split_across_writes() -> None:
    register_secret("TOPSECRET")
    target = io.StringIO()
    stream = RedactingStream(target)
    stream.write("key=TOP")
    assert target.getvalue() == "key="  # "TOP" could start the secret: held back
    stream.write("SEC")
    stream.write("RET and more\n")
    assert target.getvalue() == f"key={REDACTED} and more\n"


def test_stream_releases_a_false_start_at_the_next_write_or_flush() -> None:
    register_secret("TOPSECRET")
    target = io.StringIO()
    stream = RedactingStream(target)
    stream.write("TOPS")
    stream.write("ail\n")
    assert target.getvalue() == "TOPSail\n"
    stream.write("ends with TOPSECRE")
    assert target.getvalue() == "TOPSail\nends with "
    stream.flush()
    assert target.getvalue() == "TOPSail\nends with TOPSECRE"  # not the secret, so shown on flush


def test_stream_holds_back_at_most_longest_minus_one() -> None:
    register_secret("abcdef")
    target = io.StringIO()
    stream = RedactingStream(target)
    stream.write("xx" + "abcde")
    assert target.getvalue() == "xx"
    stream.write("a")  # "abcdea": "a" could start the secret again
    assert target.getvalue() == "xxabcde"
    stream.write("bcdef!")
    assert target.getvalue() == f"xxabcde{REDACTED}!"


def test_stream_catches_a_secret_written_one_character_at_a_time() -> None:
    register_secret("p4ssw0rd")
    target = io.StringIO()
    stream = RedactingStream(target)
    for char in "user p4ssw0rd done\n":
        stream.write(char)
    assert target.getvalue() == f"user {REDACTED} done\n"


def test_stream_text_without_partial_match_is_not_delayed() -> None:
    register_secret("p4ssw0rd")
    target = io.StringIO()
    stream = RedactingStream(target)
    print("[1/3] bronze COMPLETED", file=stream)
    assert target.getvalue() == "[1/3] bronze COMPLETED\n"


def test_stream_does_not_expose_the_binary_buffer() -> None:
    stream = RedactingStream(io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    with pytest.raises(AttributeError, match="binary buffer"):
        _ = stream.buffer
    assert stream.encoding == "utf-8" and stream.writable()


def test_stream_threads_writing_at_once() -> None:
    register_secret("SECRET-VALUE-42")
    target = io.StringIO()
    stream = RedactingStream(target)

    def worker(n: int) -> None:
        for i in range(200):
            stream.write(f"t{n} line {i} SECRET-VALUE-42\n")

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stream.flush()
    text = target.getvalue()
    assert "SECRET" not in text and text.count(REDACTED) == 6 * 200 and text.count("\n") == 6 * 200


def test_secret_registered_while_the_stream_is_in_use() -> None:
    target = io.StringIO()
    stream = RedactingStream(target)
    stream.write("before: late-secret\n")
    register_secret("late-secret")
    stream.write("after: late-secret\n")
    assert target.getvalue() == f"before: late-secret\nafter: {REDACTED}\n"


# ------------------------------------------------------------------------------------------------ redacted_output
def test_redacted_output_swaps_and_restores_the_streams(capsys) -> None:
    register_secret("in-the-clear")
    before = sys.stdout, sys.stderr
    with redacted_output():
        assert isinstance(sys.stdout, RedactingStream) and isinstance(sys.stderr, RedactingStream)
        print("out: in-the-clear")
        print("err: in-the", end="", file=sys.stderr)
        print("-clear", file=sys.stderr)
    assert (sys.stdout, sys.stderr) == before
    captured = capsys.readouterr()
    assert captured.out == f"out: {REDACTED}\n" and captured.err == f"err: {REDACTED}\n"


def test_redacted_output_restores_after_an_exception() -> None:
    before = sys.stdout, sys.stderr
    with pytest.raises(ValueError), redacted_output():
        raise ValueError("x")
    assert (sys.stdout, sys.stderr) == before


def test_uncaught_exception_leaving_redacted_output_prints_redacted(tmp_path) -> None:
    """In a fresh interpreter: Python prints the traceback after the block has restored the streams."""
    script = ("from framework.redaction import register_secret, redacted_output\n"
              "register_secret('zz-secret-zz')\n"
              "def main():\n"
              "    with redacted_output():\n"
              "        print('printed zz-secret-zz')\n"
              "        try:\n"
              "            raise KeyError('inner zz-secret-zz')\n"
              "        except KeyError as exc:\n"
              "            raise RuntimeError('outer zz-secret-zz') from exc\n"
              "main()\n")
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 1
    assert "zz-secret-zz" not in result.stdout + result.stderr
    assert result.stdout == f"printed {REDACTED}\n"
    assert f"RuntimeError: outer {REDACTED}" in result.stderr and f"KeyError: 'inner {REDACTED}'" in result.stderr


# ---------------------------------------------------------------------------------------------------- exceptions
def test_redact_exception_text() -> None:
    register_secret("db-pass-99")
    try:
        try:
            raise ConnectionError("login with db-pass-99 refused")
        except ConnectionError as inner:
            raise RuntimeError("could not connect (password db-pass-99)") from inner
    except RuntimeError as exc:
        assert redact_exception_text(exc) == f"could not connect (password {REDACTED})"
        full = redact_exception_text(exc, with_traceback=True)
    assert "db-pass-99" not in full
    assert f"ConnectionError: login with {REDACTED} refused" in full
    assert f"RuntimeError: could not connect (password {REDACTED})" in full and "Traceback" in full

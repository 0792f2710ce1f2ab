"""Secret redaction: values read with ``dbutils.secrets.get`` show as ``[REDACTED]`` wherever the framework
writes text, as in Databricks notebook and job output.

Databricks' contract (docs: "Secret redaction"): every value read with ``dbutils.secrets.get()`` is replaced by
``[REDACTED]`` when displayed, and only the literal is; a transformed value (a slice, one character at a time,
base64) is not. The documentation names no minimum length, so no registered value is too short to redact here
either: a one-character secret blanks that character everywhere, which is what its owner asked for. Only the
empty string is ignored (it "occurs" between every two characters). Besides the literal, the escaped forms that
the framework itself produces are registered: the body of its JSON string (the event log's ``details``) and of
its Python ``repr`` (an exception message that shows a value with ``!r``). They differ from the literal only for
values with quotes, backslashes, control or non-ASCII characters.

Data is never redacted (Databricks does not redact table contents either): this module filters output only, that
is the console (:func:`redacted_output`), the event log and reports (:func:`redact_value`), and uncaught
exceptions (:func:`redact_exception_text`).
"""

from __future__ import annotations

import json
import re
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TextIO

REDACTED = "[REDACTED]"


@dataclass(frozen=True)
class _Snapshot:
    """The registry's state at one moment: replaced whole on every registration, so readers need no lock."""

    secrets: frozenset[str] = frozenset()
    forms: tuple[str, ...] = ()  # every form to replace, longest first
    pattern: re.Pattern[str] | None = None

    @property
    def longest(self) -> int:
        return len(self.forms[0]) if self.forms else 0


class SecretRegistry:
    """A thread-safe set of secret values and the text forms in which they are replaced."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot = _Snapshot()

    def register(self, value: str) -> None:
        """Remember ``value`` (and its escaped forms) as a secret; the empty string is ignored."""
        if not value or value in self._snapshot.secrets:
            return
        with self._lock:
            self._snapshot = _build(self._snapshot.secrets | {value})

    def values(self) -> frozenset[str]:
        """The registered secret values (without their escaped forms)."""
        return self._snapshot.secrets

    def clear(self) -> None:
        """Forget every secret (tests; a process never needs to)."""
        with self._lock:
            self._snapshot = _Snapshot()

    def snapshot(self) -> _Snapshot:
        """The current state (secrets, their forms, the compiled pattern); one object, so a reader sees a
        consistent state without taking the lock."""
        return self._snapshot

    def redact(self, text: str) -> str:
        """``text`` with every registered value replaced by ``[REDACTED]``."""
        pattern = self._snapshot.pattern
        return text if pattern is None else pattern.sub(REDACTED, text)


def _forms(value: str) -> set[str]:
    return {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], repr(value)[1:-1]}


def _build(secrets: frozenset[str]) -> _Snapshot:
    forms = {form for value in secrets for form in _forms(value) if form}
    # Longest first: at one position the regex takes the first alternative that matches, so a secret that
    # contains another one is replaced whole rather than leaving its remainder in clear.
    ordered = tuple(sorted(forms, key=lambda f: (-len(f), f)))
    return _Snapshot(secrets, ordered, re.compile("|".join(re.escape(f) for f in ordered)))


SECRETS = SecretRegistry()
"""The process-wide registry that ``dbutils.secrets.get`` fills."""


def register_secret(value: str) -> None:
    """Register a secret value process-wide (called by ``dbutils.secrets.get``/``getBytes``)."""
    SECRETS.register(value)


def redact(text: str) -> str:
    """``text`` with every secret registered in this process replaced by ``[REDACTED]``."""
    return SECRETS.redact(text)


def redact_value(obj: Any) -> Any:
    """A copy of a nested structure (dicts, lists, tuples) with its strings, keys included, redacted.

    Used on event-log rows and report JSON before they are written.

    Args:
        obj: A string, or dicts/lists/tuples (named tuples keep their type) of strings and other values.

    Returns:
        The redacted copy. Other values (numbers, timestamps, ``None``) are kept as they are; with no secret
        registered, ``obj`` itself.
    """
    if SECRETS.snapshot().pattern is None:
        return obj
    return _redact_nested(obj)


def _redact_nested(obj: Any) -> Any:
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {_redact_nested(k): _redact_nested(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_redact_nested(v) for v in obj]
    if isinstance(obj, tuple):
        items = [_redact_nested(v) for v in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
    return obj


def redact_exception_text(exc: BaseException, *, with_traceback: bool = False) -> str:
    """The text of an exception with every registered secret replaced by ``[REDACTED]``.

    Args:
        exc: The exception.
        with_traceback: Format the whole traceback with its chained causes, as Python prints an uncaught
            exception, instead of the message alone (``str(exc)``).
    """
    if not with_traceback:
        return redact(str(exc))
    return redact("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))


class RedactingStream:
    """A text stream whose ``write`` redacts secrets before passing the text on to ``target``.

    A secret split over two ``write`` calls is still caught: the end of a write that could be the start of a
    secret (at most the longest secret's length minus one characters) is held back until the next write or
    :meth:`flush`. Text that cannot start a secret goes through at once, so progress lines are not delayed.
    The binary ``buffer`` of the target is deliberately not exposed (it would bypass redaction).
    """

    def __init__(self, target: TextIO, registry: SecretRegistry | None = None) -> None:
        self.target = target
        self._registry = registry or SECRETS
        self._pending = ""
        self._lock = threading.RLock()

    def write(self, text: str) -> int:
        """Pass ``text`` on redacted, holding back an end that could be the start of a secret.

        Returns:
            ``len(text)``, as if everything was written.
        """
        with self._lock:
            ready, self._pending = _split(self._pending + text, self._registry.snapshot())
            if ready:
                self.target.write(ready)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        """Write each of ``lines`` as :meth:`write` does (no newlines are added)."""
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Write the held-back end (redacted), then flush the target."""
        with self._lock:
            if self._pending:
                pending, self._pending = self._pending, ""
                self.target.write(self._registry.redact(pending))
            self.target.flush()

    def isatty(self) -> bool:
        """Whether the target is a terminal, so that code asking the wrapped stream decides as before."""
        return bool(self.target.isatty())

    def fileno(self) -> int:
        """The target's file descriptor; what is written to it directly is not redacted."""
        return self.target.fileno()

    def writable(self) -> bool:
        """Always True: the stream is for writing."""
        return True

    @property
    def encoding(self) -> str:
        """The target's encoding (``utf-8`` if it has none)."""
        return str(getattr(self.target, "encoding", "utf-8"))

    @property
    def errors(self) -> str | None:
        """The target's handler for encoding errors, or None if it has none."""
        return getattr(self.target, "errors", None)

    def __getattr__(self, name: str) -> Any:
        if name == "buffer":
            raise AttributeError("RedactingStream has no binary buffer: write text so that secrets are redacted")
        return getattr(self.target, name)


def _split(text: str, snap: _Snapshot) -> tuple[str, str]:
    """Split ``text`` into its redacted part that can be written now and the raw tail to hold back."""
    if snap.pattern is None:
        return text, ""
    cut = len(text) - _partial_tail(text, snap)
    out: list[str] = []
    pos = 0
    for match in snap.pattern.finditer(text):
        if match.start() >= cut:
            break
        out += [text[pos:match.start()], REDACTED]
        pos = match.end()
    if pos < cut:
        out.append(text[pos:cut])
        pos = cut
    return "".join(out), text[pos:]


def _partial_tail(text: str, snap: _Snapshot) -> int:
    """The length of the longest end of ``text`` that is the beginning (not the whole) of a secret form."""
    for size in range(min(snap.longest - 1, len(text)), 0, -1):
        tail = text[-size:]
        if any(len(form) > size and form.startswith(tail) for form in snap.forms):
            return size
    return 0


@contextmanager
def redacted_output() -> Iterator[None]:
    """Redact everything written to ``sys.stdout``/``sys.stderr`` inside the block.

    The original streams come back (flushed) when the block ends. An exception that leaves the block is printed
    redacted too, if nothing catches it: Python prints uncaught exceptions after the streams are restored, so the
    block installs a redacting ``sys.excepthook`` then.
    """
    saved = sys.stdout, sys.stderr
    wrapped = [s if s is None or isinstance(s, RedactingStream) else RedactingStream(s) for s in saved]
    sys.stdout, sys.stderr = wrapped[0], wrapped[1]
    try:
        yield
    except BaseException as exc:
        if not isinstance(exc, (SystemExit, KeyboardInterrupt, GeneratorExit)):
            _install_excepthook()
        raise
    finally:
        for stream in wrapped:
            if stream is not None:
                with suppress(Exception):
                    stream.flush()
        sys.stdout, sys.stderr = saved


ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], Any]


class _RedactingExceptHook:
    """``sys.excepthook`` that prints an uncaught exception's traceback redacted."""

    def __init__(self, previous: ExceptHook) -> None:
        self.previous = previous

    def __call__(self, kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if SECRETS.snapshot().pattern is None:
            self.previous(kind, exc, tb)
            return
        text = redact("".join(traceback.format_exception(kind, exc, tb)))
        if sys.stderr is not None:
            sys.stderr.write(text)
            sys.stderr.flush()


def _install_excepthook() -> None:
    if not isinstance(sys.excepthook, _RedactingExceptHook):
        sys.excepthook = _RedactingExceptHook(sys.excepthook)

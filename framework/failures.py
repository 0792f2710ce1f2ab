"""Failures classified once, by type: the one place that walks an exception's cause chain.

A flow can fail in Python (its query function raised), in Spark (analysis, a task, a streaming query), or in a
framework guard that runs inside Spark (an ``expect_or_fail`` rule). Spark wraps the last two in several layers
(``StreamingQueryException`` → ``SparkException`` → ...). :func:`classify` walks the Python and JVM cause chain
once and returns a typed error with parameters:

- a guard's own error when a framework guard inside the plan stopped the job: the guard raises Spark's
  ``USER_RAISED_EXCEPTION`` whose ``errorMessage`` parameter is a JSON object built by Spark, read here as data
  (:func:`raised_error`): :class:`~framework.errors.ExpectationViolation` for an ``expect_or_fail`` rule
  (``quality/engine.py``), :class:`~framework.errors.UnknownFieldError` for Auto Loader's new-column guard
  (``autoloader/records.py``);
- a :class:`~framework.errors.PipelineError` raised by framework code on the way (also one raised inside a
  ``foreachBatch`` handler, which reaches here through :class:`HandlerErrors`), unchanged;
- otherwise a :class:`~framework.errors.FlowError` with the root cause (Python exception class and message, or
  Spark's error class and message), the whole chain for the event log, and the file and line of the query
  function when known.

Nothing here decides by searching a message's text.
"""

from __future__ import annotations

import json
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from framework.errors import CauseInfo, ExpectationViolation, FlowError, PipelineError, UnknownFieldError

VIOLATION_KEY = "medallion_error"  # the key of the JSON payload of a framework guard's raise_error

_MAX_DEPTH = 24
_FRAMEWORK_DIR = str(Path(__file__).resolve().parent) + "/"


@dataclass(frozen=True)
class _Link:
    """One exception of the chain: its description, and the object (Python exception or JVM throwable)."""

    info: CauseInfo
    python: BaseException | None = None
    java: Any = None


def classify(exc: BaseException, *, flow: str, dataset: str, file: str | None = None,
             line: int | None = None, handler_error: BaseException | None = None) -> PipelineError:
    """The typed error for ``exc``, raised while running ``flow`` (see the module docstring)."""
    # a foreachBatch handler's own exception, with its JVM causes intact, goes last (nearest the root): what
    # reached the driver through the streaming query holds only its text
    chain = [*_walk(exc), *(_walk(handler_error) if handler_error is not None else ())]
    guard = _guard_error(chain, flow, dataset)
    if guard is not None:
        return guard
    own = next((link.python for link in chain if isinstance(link.python, PipelineError)), None)
    if own is not None:
        return own
    where = next((w for link in reversed(chain) if link.python is not None
                  for w in (_user_frame(link.python),) if w is not None), None)
    root = _root(chain)
    return FlowError(flow, dataset, root, [link.info for link in chain],
                     file=where[0] if where else file, line=where[1] if where else line)


def spark_causes(exc: BaseException) -> list[tuple[CauseInfo, dict[str, str]]]:
    """Every exception of the chain with its Spark message parameters (empty for non-Spark exceptions)."""
    out = []
    for link in _walk(exc):
        params = _call(link.java, "getMessageParameters") if link.java is not None else None
        values = {str(k): str(v) for k, v in params.items()} if params is not None else {}
        path = _call(link.java, "getPath") if link.java is not None and "path" not in values else None
        if path is not None:
            values["path"] = str(path)  # the framework's own JVM exceptions name their file with a getter
        out.append((link.info, values))
    return out


def cause_chain(exc: BaseException) -> list[CauseInfo]:
    """Every exception of ``exc``'s Python and JVM cause chain, outermost first."""
    if isinstance(exc, FlowError):
        return list(exc.chain)
    return [link.info for link in _walk(exc)]


def _walk(exc: BaseException) -> Iterator[_Link]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < _MAX_DEPTH:
        seen.add(id(current))
        java = _java_origin(current)
        yield _Link(_python_info(current), python=current, java=java)
        if java is not None:
            yield from _walk_java(_call(java, "getCause"))
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)


def _walk_java(throwable: Any) -> Iterator[_Link]:
    depth = 0
    while throwable is not None and depth < _MAX_DEPTH:
        depth += 1
        name = str(_call(throwable.getClass(), "getName") or "java.lang.Throwable")
        message = _call(throwable, "getMessage")
        yield _Link(CauseInfo(name, str(message) if message is not None else "", _condition(throwable)),
                    java=throwable)
        cause = _call(throwable, "getCause")
        if cause is None or cause.equals(throwable):
            break
        throwable = cause


def _python_info(exc: BaseException) -> CauseInfo:
    if isinstance(exc, PipelineError):
        return CauseInfo(type(exc).__name__, str(exc), exc.code)
    condition = None
    get = getattr(exc, "getCondition", None)
    if callable(get):
        try:
            condition = get()
        except Exception:  # a pyspark error without a JVM origin
            condition = None
    return CauseInfo(type(exc).__name__, str(exc), str(condition) if condition else None)


def _java_origin(exc: BaseException) -> Any:
    """The JVM throwable behind a pyspark or py4j exception, if any."""
    return getattr(exc, "_origin", None) or getattr(exc, "java_exception", None)


def _call(obj: Any, method: str) -> Any:
    try:
        return getattr(obj, method)()
    except Exception:  # py4j: the object has no such method, or the gateway is gone
        return None


def _condition(throwable: Any) -> str | None:
    """Spark's error class of a JVM throwable (a ``SparkThrowable``), or None."""
    value = _call(throwable, "getCondition")
    return str(value) if value else None


def raised_error(exc: BaseException) -> PipelineError | None:
    """The typed error a framework guard raised inside a Spark plan, found in ``exc``'s cause chain, or None."""
    return _guard_error(list(_walk(exc)), "", "")


def guard_payload(error_code: str, **fields: Any) -> dict[str, Any]:
    """The fields of a guard's JSON payload (build it in Spark with ``to_json(struct(...))``)."""
    return {VIOLATION_KEY: error_code, **fields}


def _guard_error(chain: list[_Link], flow: str, dataset: str) -> PipelineError | None:
    for link in chain:
        payload = _payload(link)
        if payload is None:
            continue
        code = payload.get(VIOLATION_KEY)
        if code == "EXPECTATION_VIOLATION":
            return ExpectationViolation(str(payload.get("flow") or flow), str(payload.get("dataset") or dataset),
                                        [str(n) for n in payload.get("expectations") or []],
                                        str(payload.get("record")))
        if code == UnknownFieldError.code:
            return UnknownFieldError([str(f) for f in payload.get("fields") or []],
                                     retryable=bool(payload.get("retryable")), where=f"File: {payload.get('file')}")
    return None


def _payload(link: _Link) -> dict[str, Any] | None:
    """The JSON payload of a ``USER_RAISED_EXCEPTION`` raised by a framework guard, or None."""
    if link.info.error_class != "USER_RAISED_EXCEPTION" or link.java is None:
        return None
    params = _call(link.java, "getMessageParameters")
    text = params.get("errorMessage") if params is not None else None
    try:
        payload = json.loads(str(text)) if text is not None else None
    except ValueError:
        return None  # a user's own raise_error
    return payload if isinstance(payload, dict) and VIOLATION_KEY in payload else None


def _root(chain: list[_Link]) -> CauseInfo:
    """The innermost exception that says something: a Python worker's error shows its last line."""
    for link in reversed(chain):
        info = link.info
        if info.class_name.endswith("PythonException") and info.message:
            return _python_worker_error(info)
        if info.message.strip():
            return info
    return chain[-1].info


def _python_worker_error(info: CauseInfo) -> CauseInfo:
    """A Python UDF's exception, shipped from a worker as its formatted traceback: its last line."""
    lines = [line for line in info.message.splitlines() if line.strip()]
    last = lines[-1].strip() if lines else info.message
    name, _, message = last.partition(": ")
    if name and " " not in name:
        return CauseInfo(name, message, info.error_class)
    return CauseInfo(info.class_name, last, info.error_class)


def _user_frame(exc: BaseException) -> tuple[str, int] | None:
    """The innermost traceback frame outside the framework and site-packages: the user's own code."""
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        name = frame.filename
        if name.startswith(_FRAMEWORK_DIR) or "site-packages" in name or name.startswith("<"):
            continue
        found = (name, frame.lineno or 0)
    return found


@dataclass
class HandlerErrors:
    """Remembers the Python exception a ``foreachBatch`` handler raised: Spark returns it to the driver as a
    JVM error whose text is all that is left of it, so the flow reads the original from here instead."""

    first: BaseException | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def wrap(self, handler: Callable[[Any, int], Any]) -> Callable[[Any, int], Any]:
        """``handler``, recording the first exception it raises (and raising it on)."""

        def run(batch: Any, batch_id: int) -> Any:
            try:
                return handler(batch, batch_id)
            except BaseException as exc:
                with self._lock:
                    if self.first is None:
                        self.first = exc
                raise

        return run

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
- a :class:`~framework.errors.KafkaError` when Kafka's client failed inside the query (brokers that stopped
  answering, credentials refused: ``framework.kafka.check.kafka_failure``, by the JVM exception's class);
- otherwise a :class:`~framework.errors.FlowError` with the root cause (Python exception class and message, or
  Spark's error class and message), the whole chain for the event log, and the file and line of the query
  function when known.

Nothing here decides by searching a message's text.
"""

from __future__ import annotations

import json
import re
import sysconfig
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
_STDLIB_DIR = sysconfig.get_paths()["stdlib"] + "/"


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
    from framework.kafka.check import kafka_failure  # Kafka's own exceptions, by class (framework/kafka)

    kafka = kafka_failure(link.java for link in chain if link.java is not None)
    if kafka is not None:
        return kafka
    where = next((w for link in reversed(chain) if link.python is not None
                  for w in (user_frame(link.python),) if w is not None), None)
    worker = _worker_error(chain)
    root = worker.info if worker is not None else _root(chain)
    where = where or (worker.where if worker is not None else None)
    infos = [link.info for link in chain]
    if worker is not None:  # the user's exception, raised on a Python worker, ends the chain whole
        infos.append(worker.info)
    return FlowError(flow, dataset, root, infos, file=where[0] if where else file,
                     line=where[1] if where else line)


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


def headline(exc: BaseException) -> str:
    """``Class: first line`` of ``exc``; for a py4j error, whose own text only names the JVM call that failed
    (``An error occurred while calling o207.json``), of the innermost JVM cause that says something."""
    from py4j.protocol import Py4JJavaError

    chain = list(_walk(exc))
    return (_root(chain) if isinstance(exc, Py4JJavaError) else chain[0].info).headline()


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
        if java is not None:  # a py4j error (no ``_origin``) wraps a throwable pyspark did not convert: it comes next
            yield from _walk_java(_call(java, "getCause") if getattr(current, "_origin", None) is not None else java)
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
    """The innermost exception that says something."""
    for link in reversed(chain):
        if link.info.message.strip():
            return link.info
    return chain[-1].info


@dataclass(frozen=True)
class _WorkerError:
    """The exception a Python UDF raised on a worker, and the innermost frame of the user's code there."""

    info: CauseInfo
    where: tuple[str, int] | None


def _worker_error(chain: list[_Link]) -> _WorkerError | None:
    """The Python worker's exception, from the innermost ``PythonException`` of the chain, or None."""
    info = next((info for link in reversed(chain) for info in (_worker_traceback(link),) if info is not None),
                None)
    if info is None:
        return None
    return _WorkerError(_python_worker_error(info), _worker_frame(info.message))


# Spark's error classes for an exception raised in a Python data source's planner or streaming-source process
# (its formatted traceback is the ``msg`` parameter).
_DATA_SOURCE_ERRORS = frozenset({"PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR", "PYTHON_DATA_SOURCE_ERROR"})


def _worker_traceback(link: _Link) -> CauseInfo | None:
    """A ``PythonException`` with the worker's traceback as its message, or None for any other exception.

    The JVM's exception keeps the traceback in its ``traceback`` message parameter; its own message can be
    Spark's error-class text alone (seen when the exception reaches the driver unconverted, as a
    ``Py4JJavaError``'s cause)."""
    info = link.info
    if info.error_class in _DATA_SOURCE_ERRORS:  # a Python data source's driver-side process failed
        key = "msg"
    elif info.class_name.endswith("PythonException"):
        key = "traceback"
    else:
        return None
    params = _call(link.java, "getMessageParameters") if link.java is not None else None
    text = params.get(key) if params is not None else None
    if text:
        return CauseInfo(info.class_name, str(text), info.error_class)
    return info if key == "traceback" and info.message else None


def _last_traceback(text: str) -> tuple[list[str], list[str]]:
    """The frame lines and the exception lines of the last ``Traceback`` block of a formatted traceback.

    A UDF's exception reaches the driver only as the worker's formatted traceback (the message of Spark's
    ``PythonException``); it is read back here in the format Python's ``traceback`` module writes: the last
    block is the exception that ended the worker, and its exception lines (the class, the message and the
    message's further lines) follow the last frame, unindented."""
    lines = text.splitlines()
    start = max((i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")),
                default=-1)
    block = lines[start + 1:]
    first = next((i for i, line in enumerate(block) if line.strip() and not line[:1].isspace()), len(block))
    return block[:first], block[first:]


def _python_worker_error(info: CauseInfo) -> CauseInfo:
    """A Python UDF's exception: its class and its whole message, from the worker's formatted traceback."""
    _, exception = _last_traceback(info.message)
    name, _, message = exception[0].partition(": ") if exception else ("", "", "")
    if not name or " " in name:
        last = next((line.strip() for line in reversed(info.message.splitlines()) if line.strip()), "")
        return CauseInfo(info.class_name, last or info.message, info.error_class)
    return CauseInfo(name, "\n".join([message, *exception[1:]]).rstrip(), info.error_class)


def _worker_frame(text: str) -> tuple[str, int] | None:
    """The innermost frame of the user's code in a worker's formatted traceback, or None."""
    frames, _ = _last_traceback(text)
    found = [(m.group(1), int(m.group(2))) for line in frames for m in (_FRAME.match(line),)
             if m is not None and _is_user_file(m.group(1))]
    return found[-1] if found else None


_FRAME = re.compile(r'^\s*File "(.+)", line (\d+)')


def _is_user_file(name: str) -> bool:
    """True for a file of the user's code: not the framework's, Python's or an installed package's, not
    generated."""
    return not (name.startswith((_FRAMEWORK_DIR, _STDLIB_DIR, "<")) or "site-packages" in name)


def user_frame(exc: BaseException) -> tuple[str, int] | None:
    """The innermost traceback frame outside the framework and site-packages: the user's own code."""
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if _is_user_file(frame.filename):
            found = (frame.filename, frame.lineno or 0)
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

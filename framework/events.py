"""The pipeline event log: a Delta table at ``<storage>/system/events`` in Databricks' schema.

``origin``, ``sequence`` and ``error`` are structs (as in the Delta event log of Hive-metastore pipelines);
``details`` is a JSON string shaped by ``event_type``, so Databricks' monitoring queries
(``from_json(details, ...)``, ``explode`` over ``flow_progress.data_quality.expectations``) run unchanged.
Events are written as the update runs: :meth:`EventLog.commit_soon` asks a background writer to append
what is pending (the runner calls it when the update starts running and when each flow ends), so a killed
update leaves its definitions and the progress of the flows that finished; :meth:`EventLog.close` appends the
rest when the update ends. Each commit is written by the driver (``framework.storage.driver``: a Parquet file and a
JSON commit, no Spark job), and Delta checkpoints the log every ``CHECKPOINT_EVERY`` commits.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from framework.redaction import redact_value

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

    from framework.errors import CauseInfo

EVENT_LOG_DDL = (
    "id STRING, "
    "sequence STRUCT<data_plane_id: STRUCT<instance: STRING, seq_no: BIGINT>, "
    "control_plane_seq_no: BIGINT>, "
    "origin STRUCT<cloud: STRING, region: STRING, org_id: BIGINT, pipeline_id: STRING, pipeline_type: STRING, "
    "pipeline_name: STRING, cluster_id: STRING, update_id: STRING, maintenance_id: STRING, table_id: STRING, "
    "table_name: STRING, flow_id: STRING, flow_name: STRING, batch_id: BIGINT, request_id: STRING, "
    "dataset_name: STRING, sink_name: STRING, user_id: STRING, user_name: STRING, host: STRING>, "
    "timestamp TIMESTAMP, message STRING, level STRING, maturity_level STRING, "
    "error STRUCT<fatal: BOOLEAN, exceptions: ARRAY<STRUCT<class_name: STRING, message: STRING, "
    "error_class: STRING>>>, "
    "details STRING, event_type STRING"
)

# The schema of flow_progress details, for from_json in reports and tests (as in Databricks' monitoring docs).
FLOW_PROGRESS_DETAILS_DDL = (
    "flow_progress STRUCT<status: STRING, metrics: STRUCT<num_output_rows: BIGINT, num_upserted_rows: BIGINT, "
    "num_deleted_rows: BIGINT, num_input_rows: BIGINT, backlog_files: BIGINT>, "
    "data_quality: STRUCT<dropped_records: BIGINT, "
    "expectations: ARRAY<STRUCT<name: STRING, dataset: STRING, passed_records: BIGINT, failed_records: BIGINT>>>>"
)


def event_log_schema() -> StructType:
    """The event log's schema (:data:`EVENT_LOG_DDL`) as a StructType, parsed in Python (no JVM needed)."""
    from pyspark.sql.types import StructType

    tokens = re.findall(r"\w+|[<>,:]", EVENT_LOG_DDL)
    tokens.reverse()  # popped from the end
    fields = [_ddl_field(tokens, inside_struct=False)]
    while tokens and tokens.pop() == ",":
        fields.append(_ddl_field(tokens, inside_struct=False))
    return StructType(fields)


def _ddl_field(tokens: list[str], *, inside_struct: bool) -> Any:
    """``name TYPE`` (``name: TYPE`` inside ``STRUCT<...>``) of the small DDL subset the event log uses."""
    from pyspark.sql.types import StructField

    name = tokens.pop()
    if inside_struct and tokens.pop() != ":":
        raise ValueError(f"':' expected after {name}")
    return StructField(name, _ddl_type(tokens))


def _ddl_type(tokens: list[str]) -> Any:
    from pyspark.sql.types import ArrayType, BooleanType, LongType, StringType, StructType, TimestampType

    word = tokens.pop()
    simple = {"STRING": StringType(), "BIGINT": LongType(), "BOOLEAN": BooleanType(), "TIMESTAMP": TimestampType()}
    if word in simple:
        return simple[word]
    if tokens.pop() != "<" or word not in ("ARRAY", "STRUCT"):
        raise ValueError(f"unsupported type {word}")
    if word == "ARRAY":
        element = _ddl_type(tokens)
        tokens.pop()  # >
        return ArrayType(element)
    fields = [_ddl_field(tokens, inside_struct=True)]
    while tokens.pop() == ",":
        fields.append(_ddl_field(tokens, inside_struct=True))
    return StructType(fields)


@dataclass
class EventLog:
    """Collects the events of one update and appends them to the event-log Delta table."""

    path: str
    pipeline_id: str
    pipeline_name: str
    update_id: str
    hooks: list[Callable[[dict[str, Any]], Any]] = field(default_factory=list)
    _events: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _seq: int = 0
    _instance: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    _write_lock: threading.Lock = field(default_factory=threading.Lock)  # one commit at a time
    min_commit_interval_s: float = 0.0  # the background writer's least time between two commits
    _wake: threading.Condition = field(default_factory=threading.Condition)
    _wanted: bool = False
    _closing: bool = False
    _writer: threading.Thread | None = None
    write_error: BaseException | None = None

    def emit(self, event_type: str, message: str, *, level: str = "INFO", details: dict[str, Any] | None = None,
             flow_name: str | None = None, dataset_name: str | None = None, batch_id: int | None = None,
             error: BaseException | None = None, sink_name: str | None = None,
             chain: Sequence[CauseInfo] | None = None) -> dict[str, Any]:
        """Record one event (written by the next commit) and pass it to the event hooks.

        ``chain`` is the error's whole cause chain (outermost first) when the caller walked it; otherwise the
        Python chain of ``error`` is used."""
        with self._lock:
            self._seq += 1
            seq = self._seq
        event: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "sequence": {"data_plane_id": {"instance": self._instance, "seq_no": seq},
                         "control_plane_seq_no": seq},
            "origin": {
                "cloud": "local", "region": None, "org_id": 0, "pipeline_id": self.pipeline_id,
                "pipeline_type": "WORKSPACE", "pipeline_name": self.pipeline_name, "cluster_id": "local",
                "update_id": self.update_id, "maintenance_id": None,
                "table_id": None, "table_name": dataset_name,
                "flow_id": _stable_id(self.pipeline_id, flow_name) if flow_name else None,
                "flow_name": flow_name, "batch_id": batch_id, "request_id": None,
                "dataset_name": dataset_name, "sink_name": sink_name, "user_id": None, "user_name": None,
                "host": None,
            },
            "timestamp": datetime.now(UTC).replace(tzinfo=None),
            "message": message,
            "level": level,
            "maturity_level": "STABLE" if event_type in _STABLE else "EVOLVING",
            "error": _error_struct(error, chain) if error is not None else None,
            "details": json.dumps({event_type: details or {}}, default=str),
            "event_type": event_type,
        }
        event = redact_value(event)  # secrets read with dbutils.secrets.get never reach the log in clear
        with self._lock:
            self._events.append(event)
        for hook in self.hooks:
            with contextlib.suppress(Exception):
                hook(event)
        return event

    @property
    def events(self) -> list[dict[str, Any]]:
        """The events not written yet, oldest first (a copy)."""
        with self._lock:
            return list(self._events)

    def flush(self, spark: SparkSession) -> int:
        """Append the pending events to the Delta event log in one commit; return how many were written."""
        with self._write_lock:
            with self._lock:
                pending, self._events = self._events, []
            if not pending:
                return 0
            try:
                _append(spark, self.path, pending)
            except BaseException:
                with self._lock:  # not written: they stay pending, before what was emitted since
                    self._events[:0] = pending
                raise
            # The events are written; a checkpoint only spares readers (and the next append's look at the log)
            # a long tail of commits, and a later flush tries again.
            with contextlib.suppress(Exception):
                checkpoint_event_log(spark, self.path)
            return len(pending)

    def start_writer(self, spark: SparkSession) -> None:
        """Start the background writer that :meth:`commit_soon` wakes."""
        if self._writer is not None:
            return
        self._writer = threading.Thread(target=self._write_loop, args=(spark,), name="medallion-event-log",
                                        daemon=True)
        self._writer.start()

    def commit_soon(self) -> None:
        """Ask the background writer to append what is pending now (without waiting for it)."""
        with self._wake:
            self._wanted = True
            self._wake.notify()

    def close(self, spark: SparkSession) -> int:
        """Stop the writer and append everything still pending; return how many events that was. Raises the
        first error the background writer met, if any, after writing what it can."""
        writer, self._writer = self._writer, None
        if writer is not None:
            with self._wake:
                self._closing = True
                self._wake.notify()
            writer.join()
        written = self.flush(spark)
        if self.write_error is not None:
            error, self.write_error = self.write_error, None
            raise error
        return written

    def _write_loop(self, spark: SparkSession) -> None:
        last = float("-inf")
        while True:
            with self._wake:
                while not self._wanted and not self._closing:
                    self._wake.wait()
                # no sooner than min_commit_interval_s after the last commit (close() does not wait)
                while not self._closing and (left := self.min_commit_interval_s - (time.monotonic() - last)) > 0:
                    self._wake.wait(left)
                closing, self._wanted = self._closing, False
            if closing:
                return
            try:
                self.flush(spark)
            except Exception as exc:  # kept and raised by close(); the events stay pending
                self.write_error = self.write_error or exc
            last = time.monotonic()


def _append(spark: SparkSession, path: str, events: list[dict[str, Any]]) -> None:
    """One commit of ``events``: written by the driver (``framework.storage.driver``, milliseconds), or through
    Spark when the table needs Delta's own writer (a protocol or schema the driver's appender does not write)."""
    from framework.storage.driver import NeedsSpark, append_rows
    from framework.storage.policy import choose

    if choose(path, event_log_schema(), kind="log", data_bytes=0, max_bytes=0).driver:
        try:
            append_rows(path, event_log_schema(), events)
            return
        except NeedsSpark:  # a protocol, layout or schema only Delta writes: found when the commit is built
            pass
    _spark_append(spark, path, events)


def checkpoint_event_log(spark: SparkSession, path: str) -> None:
    """Let Delta checkpoint the event log when enough driver commits came since its last checkpoint."""
    from framework.storage.driver import checkpoint_if_due

    if spark is not None:  # the unit tests' recorded logs have no session
        checkpoint_if_due(spark, path)


def _spark_append(spark: SparkSession, path: str, events: list[dict[str, Any]]) -> None:
    # Built inside the JVM from one JSON literal: no Python worker, no parallelize of Python objects.
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType

    payload = json.dumps([{**e, "timestamp": e["timestamp"].strftime(_TS_FORMAT)} for e in events], default=str)
    rows = F.from_json(F.lit(payload), ArrayType(event_log_schema()),
                       {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"})
    spark.range(1).select(F.inline(rows)).write.format("delta").mode("append").save(path)


_TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"
_STABLE = {"create_update", "update_progress", "flow_progress", "flow_definition", "user_action"}


def _stable_id(*parts: str | None) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(p or "" for p in parts)))


_MAX_MESSAGE = 4000  # characters of one exception's message (a streaming failure's message holds its whole plan)
_MAX_ROOT_MESSAGE = 20000  # the root cause's message, which is the user's own words, is kept (nearly) whole


def _error_struct(error: BaseException, chain: Sequence[CauseInfo] | None) -> dict[str, Any]:
    """Databricks' ``error`` struct: the error, then its whole cause chain, the root cause last."""
    from framework.errors import CauseInfo, PipelineError

    head = CauseInfo(type(error).__name__, str(error),
                     error.code if isinstance(error, PipelineError) else _spark_error_class(error))
    links = list(chain) if chain is not None else _python_chain(error)
    if links and links[0].message == head.message:
        links = links[1:]
    entries = [head, *links]
    exceptions = [{"class_name": e.class_name,
                   "message": e.message[:_MAX_ROOT_MESSAGE if i == len(entries) - 1 else _MAX_MESSAGE],
                   "error_class": e.error_class} for i, e in enumerate(entries)]
    return {"fatal": True, "exceptions": exceptions}


def _python_chain(error: BaseException) -> list[CauseInfo]:
    from framework.errors import CauseInfo

    out: list[CauseInfo] = []
    current = error.__cause__ or error.__context__
    while current is not None and len(out) < 20:
        out.append(CauseInfo(type(current).__name__, str(current), _spark_error_class(current)))
        current = current.__cause__ or current.__context__
    return out


def _spark_error_class(error: BaseException) -> str | None:
    get = getattr(error, "getCondition", None) or getattr(error, "getErrorClass", None)
    try:
        return str(get()) if callable(get) and get() else None
    except Exception:
        return None

"""The pipeline event log: a Delta table at ``<storage>/system/events`` in Databricks' schema.

``origin``, ``sequence`` and ``error`` are structs (as in the Delta event log of Hive-metastore pipelines);
``details`` is a JSON string shaped by ``event_type``, so Databricks' monitoring queries
(``from_json(details, ...)``, ``explode`` over ``flow_progress.data_quality.expectations``) run unchanged.
Events are buffered during an update and appended in one Delta commit when the update ends.
"""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

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
    from pyspark.sql.types import StructType, _parse_datatype_string

    schema = _parse_datatype_string(EVENT_LOG_DDL)
    assert isinstance(schema, StructType)
    return schema


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

    def emit(self, event_type: str, message: str, *, level: str = "INFO", details: dict[str, Any] | None = None,
             flow_name: str | None = None, dataset_name: str | None = None, batch_id: int | None = None,
             error: BaseException | None = None, sink_name: str | None = None) -> dict[str, Any]:
        """Record one event (buffered until :meth:`flush`) and pass it to the event hooks."""
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
            "error": _error_struct(error) if error is not None else None,
            "details": json.dumps({event_type: details or {}}, default=str),
            "event_type": event_type,
        }
        with self._lock:
            self._events.append(event)
        for hook in self.hooks:
            with contextlib.suppress(Exception):
                hook(event)
        return event

    @property
    def events(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._events)

    def flush(self, spark: SparkSession) -> int:
        """Append the buffered events to the Delta event log in one commit; return how many were written."""
        with self._lock:
            pending, self._events = self._events, []
        if not pending:
            return 0
        # Built inside the JVM from one JSON literal: no Python worker, no parallelize of Python objects.
        from pyspark.sql import functions as F
        from pyspark.sql.types import ArrayType

        payload = json.dumps([{**e, "timestamp": e["timestamp"].strftime(_TS_FORMAT)} for e in pending],
                             default=str)
        rows = F.from_json(F.lit(payload), ArrayType(event_log_schema()),
                           {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"})
        df = spark.range(1).select(F.inline(rows))
        df.write.format("delta").mode("append").save(self.path)
        return len(pending)


_TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"
_STABLE = {"create_update", "update_progress", "flow_progress", "flow_definition", "user_action"}


def _stable_id(*parts: str | None) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(p or "" for p in parts)))


def _error_struct(error: BaseException) -> dict[str, Any]:
    exceptions: list[dict[str, Any]] = []
    current: BaseException | None = error
    while current is not None and len(exceptions) < 5:
        exceptions.append({
            "class_name": type(current).__name__,
            "message": str(current)[:10000],
            "error_class": getattr(current, "code", None) or _spark_error_class(current),
        })
        current = current.__cause__
    return {"fatal": True, "exceptions": exceptions}


def _spark_error_class(error: BaseException) -> str | None:
    get = getattr(error, "getCondition", None) or getattr(error, "getErrorClass", None)
    try:
        return str(get()) if callable(get) and get() else None
    except Exception:
        return None

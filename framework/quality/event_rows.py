"""The report's events, and the count of an update's quarantined rows, read on the driver without Spark.

The event log is small and its files are plain Parquet (``framework.storage.plain.plain_files``): reading them with
pyarrow and selecting in Python costs milliseconds, where a Delta read costs the state reconstruction of a log that
gains several versions per update, and a Spark job per question (2 s of a warm update's `medallion run` on two
cores). :func:`driver_events` returns what ``report.read_events`` returns, or None when the log must be read through
Delta (a layout a plain read does not handle).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

MAX_BYTES = 1 << 28  # above this, Spark reads the log
WANTED = ("create_update", "update_progress", "flow_progress")
_COLUMNS = ["timestamp", "event_type", "details", "origin", "sequence", "message", "error"]


def driver_events(path: str, update_id: str | None, last_updates: int) -> list[dict[str, Any]] | None:
    """The events of the last ``last_updates`` updates (up to ``update_id``) as dicts, oldest first; None when
    the log's files cannot be read this way."""
    rows = _rows(path)
    if rows is None:
        return None
    starts: dict[str, datetime] = {}
    for row in rows:
        uid = (row.get("origin") or {}).get("update_id")
        if uid is not None and row["timestamp"] is not None:
            starts[uid] = min(starts.get(uid, row["timestamp"]), row["timestamp"])
    if update_id is not None and update_id in starts:
        starts = {u: s for u, s in starts.items() if s <= starts[update_id]}
    ids = set(sorted(starts, key=lambda u: starts[u], reverse=True)[:last_updates])
    selected = [_event(r) for r in rows if r.get("event_type") in WANTED and (r.get("origin") or {}).get("update_id") in ids]
    return sorted(selected, key=lambda e: (e["timestamp"] or datetime.min, e["seq"] or 0))


def driver_count(path: str, column: str, value: str) -> int | None:
    """How many rows of the table at ``path`` have ``column`` equal to ``value`` (all its rows when the table has
    no such column), from its live files; None when they cannot be read this way."""
    import json

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from framework.storage.plain import plain_files

    found = plain_files(path, MAX_BYTES)
    if found is None:
        return None
    has_column = column in [f["name"] for f in json.loads(found.metadata["schemaString"])["fields"]]
    total = 0
    try:
        for name in found.files:
            parquet = pq.ParquetFile(_local(path, name))
            if not has_column:
                total += parquet.metadata.num_rows
            elif column in parquet.schema_arrow.names:  # a file older than the column holds NULLs there
                total += int(pc.sum(pc.equal(parquet.read(columns=[column]).column(column), value)).as_py() or 0)
    except (OSError, ValueError, KeyError):
        return None
    return total


def _tables(path: str, columns: list[str]) -> list[Any] | None:
    """The live files of the Delta table at ``path`` as pyarrow Tables of ``columns``."""
    import pyarrow.parquet as pq

    from framework.storage.plain import plain_files

    found = plain_files(path, MAX_BYTES)
    if found is None:
        return None
    try:
        return [pq.read_table(_local(path, name), columns=columns) for name in found.files]
    except (OSError, ValueError, KeyError):
        return None


def _local(path: str, name: str) -> str:
    from framework.storage.plain import file_path

    return file_path(path, name).removeprefix("file:")


def _rows(path: str) -> list[dict[str, Any]] | None:
    tables = _tables(path, _COLUMNS)
    if tables is None:
        return None
    rows: list[dict[str, Any]] = [row for t in tables for row in t.to_pylist()]
    for row in rows:
        row["timestamp"] = _as_spark_collects(row["timestamp"])
    return rows


def _as_spark_collects(value: datetime | None) -> datetime | None:
    """A timestamp as Spark's ``collect`` gives it: naive, in this process's time zone. Parquet files written by
    the driver hold UTC instants with a time zone; Spark's INT96 ones read as naive UTC."""
    if value is None:
        return None
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return aware.astimezone().replace(tzinfo=None)


def _event(row: dict[str, Any]) -> dict[str, Any]:
    origin, sequence, error = row.get("origin") or {}, row.get("sequence") or {}, row.get("error") or {}
    exceptions = error.get("exceptions") or []
    return {"timestamp": row["timestamp"], "event_type": row.get("event_type"), "details": row.get("details"),
            "update_id": origin.get("update_id"), "flow_name": origin.get("flow_name"),
            "dataset_name": origin.get("dataset_name"), "pipeline_name": origin.get("pipeline_name"),
            "seq": sequence.get("control_plane_seq_no"), "message": row.get("message"),
            "error_message": exceptions[0].get("message") if exceptions else None}

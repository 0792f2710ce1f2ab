"""Starting a flow's streaming query.

No-data batches stay as Spark has them (``spark.sql.streaming.noDataMicroBatches.enabled``, on by default).
After the last batch with data, Structured Streaming runs one more batch without data when a stateful
operator's watermark moved: a windowed aggregation in append mode emits the windows the watermark closed, a
stream-stream join its unmatched outer rows, and even a de-duplication, which emits nothing then, records the
advanced watermark in that batch's offsets. A restarted query takes its watermark from the last batch's
offsets only (the event times seen are not in the checkpoint), so without that batch the next update's first
batch would filter with the old watermark and keep a late event Databricks drops (issue 36). The framework
used to skip that batch for de-duplication-only queries (0.9 s of the sample pipeline's 1.8 s ``orders_clean``
flow, 2 cores); it no longer does.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from framework.errors import UpdateError
from framework.internals import analyzed_plan

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"

# Starts are serialized with the interrupt flag below, so that no query starts after an interrupt stopped the
# active ones.
_START_LOCK = threading.Lock()
# Set by Ctrl-C (runner/execute.py) until the next update's flows run: a flow that was about to start its query
# when the interrupt stopped the active ones must not start it afterwards (Ctrl-C reaches the whole process).
_refusing_starts = False


def refuse_starts() -> None:
    """From now on :func:`start_query` refuses to start a query (the update was interrupted); a start in
    progress finishes first, so the query it starts is among the active ones the caller stops next."""
    global _refusing_starts
    with _START_LOCK:
        _refusing_starts = True


def allow_starts() -> None:
    """Let :func:`start_query` start queries again (an update's flows are about to run)."""
    global _refusing_starts
    with _START_LOCK:
        _refusing_starts = False


def stop_active_queries(spark: Any) -> None:
    """Stop every streaming query active in ``spark`` (one that ends on its own meanwhile is left alone)."""
    for query in list(spark.streams.active):
        with suppress(Exception):
            query.stop()


def clear_partial_writes(checkpoint: str | Path) -> list[Path]:
    """Remove what a killed process left half-written in a streaming checkpoint's logs: Spark writes each
    ``offsets/<n>`` and ``commits/<n>`` file as ``.<n>.<uuid>.tmp`` (and its ``.crc``) and renames it into
    place, so a temporary file is never a committed entry. Left there, Spark counts it as an existing log:
    a stateful query whose first offsets write was killed then fails on every later start with
    ``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``. Safe only with no query running on the checkpoint (the
    update lock). Returns the files removed."""
    removed = []
    for log in ("offsets", "commits"):
        folder = Path(checkpoint) / log
        for path in folder.glob(".*.tmp*") if folder.is_dir() else ():
            if path.name.endswith((".tmp", ".tmp.crc")):
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


def first_batch_from_a_version(checkpoint: str | Path, reservoir_id: str) -> bool:
    """Whether the stream's batch 0 (``offsets/0``) read the Delta table ``reservoir_id`` from a starting
    version rather than from an initial snapshot of it. False when batch 0 is gone or names no such table."""
    first = Path(checkpoint) / "offsets" / "0"
    try:
        lines = first.read_text(encoding="utf-8").splitlines()[2:]  # the version, the batch's metadata, sources
    except (OSError, UnicodeDecodeError):
        return False
    for line in lines:
        try:
            offset = json.loads(line)
        except ValueError:
            continue
        if isinstance(offset, dict) and offset.get("reservoirId") == reservoir_id:
            return offset.get("isStartingVersion") is False
    return False


def start_query(df: DataFrame, start: Callable[[], Any]) -> Any:
    """Call ``start`` (which starts a streaming query over ``df``). Raises UpdateError (UPDATE_CANCELED) once
    the update was interrupted (:func:`refuse_starts`)."""
    with _START_LOCK:
        if _refusing_starts:
            raise UpdateError("the update was interrupted (Ctrl-C) before this flow's query started",
                              code="UPDATE_CANCELED")
        return start()


def output_mode(df: DataFrame) -> str:
    """The output mode DLT picks for a streaming table's query, from its analysed plan: ``complete`` when the
    query aggregates the stream without an event-time watermark (Spark allows no other mode for it), ``append``
    otherwise."""
    plan = analyzed_plan(df)
    streaming_aggregate = False
    watermark = False
    stack = [plan]
    while stack:
        node = stack.pop()
        if node.isStreaming():
            name = node.nodeName()
            streaming_aggregate = streaming_aggregate or name == "Aggregate"
            watermark = watermark or name == "EventTimeWatermark"
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.size()))
    return "complete" if streaming_aggregate and not watermark else "append"

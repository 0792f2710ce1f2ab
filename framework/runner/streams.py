"""Starting a flow's streaming query, and the one setting that differs between queries: no-data batches.

After the last batch with data, Structured Streaming runs one more batch without data when a stateful
operator's watermark moved ("no-data batch"): a windowed aggregation in append mode emits the windows the
watermark closed, a stream-stream join emits its unmatched outer rows. A de-duplication emits nothing then; it
only drops keys older than the watermark from its state, which the next batch with data does as well (it
starts with the same watermark). So for a query whose only stateful operators de-duplicate, that batch changes
no table and no metric, and costs a full micro-batch: planning, a state store commit and a Delta commit (0.9 s
of the sample pipeline's 1.8 s ``orders_clean`` flow, 2 cores). Such queries start without it; every other
query keeps Spark's default.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from framework.errors import UpdateError
from framework.session_settings import session_conf

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"

# Logical operators that keep no state, or whose state (de-duplication) emits nothing when the watermark
# moves. A plan with any other operator (or one this list does not know) keeps its no-data batches.
_EVICTING = {"Deduplicate", "DeduplicateWithinWatermark"}
_STATELESS = {
    "Project", "Filter", "SubqueryAlias", "EventTimeWatermark", "CollectMetrics", "Union", "Generate",
    "StreamingRelation", "StreamingRelationV2", "StreamingExecutionRelation", "StreamingDataSourceV2Relation",
    "StreamingDataSourceV2ScanRelation", "Relation", "LogicalRDD", "LocalRelation", "View", "Repartition",
    "RepartitionByExpression", "DeserializeToObject", "SerializeFromObject", "MapPartitions", "MapElements",
    "MapInPandas", "MapInArrow", "AttachDistributedSequence", "ResolvedHint",
}
_NODE = re.compile(r"^[\s:+\-|~']*([A-Za-z][A-Za-z0-9]*)", re.M)

# A streaming query copies the session's settings when it starts; starts are serialized so that a setting
# changed for one query's start is never seen by another's.
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


def plan_operators(df: DataFrame) -> set[str]:
    """The names of the logical operators in ``df``'s analyzed plan."""
    return set(_NODE.findall(df._jdf.queryExecution().analyzed().toString()))


def only_deduplicates(df: DataFrame) -> bool:
    """True when ``df`` is a streaming query whose stateful operators are all de-duplications (and there is at
    least one): its no-data batches would only trim state."""
    if not df.isStreaming:
        return False
    names = plan_operators(df)
    return bool(names & _EVICTING) and names <= _EVICTING | _STATELESS


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
    """Call ``start`` (which starts a streaming query over ``df``) with no-data batches off when
    :func:`only_deduplicates` says they would change nothing, and as the session has them otherwise. Raises
    UpdateError (UPDATE_CANCELED) once the update was interrupted (:func:`refuse_starts`)."""
    spark = df.sparkSession
    # the plan is read outside the lock; a session that already has no-data batches off needs nothing
    trim_only = str(spark.conf.get(NO_DATA_BATCHES, "true")).lower() == "true" and only_deduplicates(df)
    with _START_LOCK:
        if _refusing_starts:
            raise UpdateError("the update was interrupted (Ctrl-C) before this flow's query started",
                              code="UPDATE_CANCELED")
        if trim_only:
            with session_conf(spark, {NO_DATA_BATCHES: "false"}):
                return start()
        return start()


def output_mode(df: DataFrame) -> str:
    """The output mode DLT picks for a streaming table's query, from its analysed plan: ``complete`` when the
    query aggregates the stream without an event-time watermark (Spark allows no other mode for it), ``append``
    otherwise."""
    plan = df._jdf.queryExecution().analyzed()
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

"""What an update and each of its flows did: the summary, the event log and callers read these."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from framework.quality.engine import ExpectationResult, QualityMetrics
from framework.storage.url import StoragePath


@dataclass
class FlowResult:
    """What one flow did in an update (the summary and the flow_progress event are built from it)."""

    flow: str
    target: str
    kind: str
    status: str = "QUEUED"
    seconds: float = 0.0
    num_input_rows: int | None = None
    num_output_rows: int | None = None
    num_upserted_rows: int | None = None
    num_deleted_rows: int | None = None
    num_rescued_rows: int | None = None  # rows with rescued data, counted where values are rescued (ingestion)
    dropped_records: int = 0
    expectations: list[ExpectationResult] = field(default_factory=list)
    batches: int = 0
    error: BaseException | None = None
    attempts: int = 1
    sources: list[dict[str, Any]] = field(default_factory=list)  # per source: start and end offsets
    commits: dict[str, int] = field(default_factory=dict)  # commits to the target per engine: driver, spark
    spark_commit_reason: str | None = None  # why the storage policy last chose Spark (framework/storage/policy.py)
    planning: dict[str, Any] | None = None  # a materialized view's planning_information (framework/incremental)

    def metrics(self) -> dict[str, Any]:
        """The ``metrics`` object of a flow_progress event: the row counts this flow knows."""
        out: dict[str, Any] = {}
        for key in ("num_output_rows", "num_upserted_rows", "num_deleted_rows", "num_input_rows", "num_rescued_rows"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    def data_quality(self) -> dict[str, Any] | None:
        """The ``data_quality`` object of a flow_progress event, or None without expectations."""
        if not self.expectations:
            return None
        return QualityMetrics(self.num_input_rows or 0, self.num_output_rows or 0, self.dropped_records,
                              tuple(self.expectations)).data_quality()

    def add(self, other: FlowResult) -> None:
        """Add what ``other`` counted (another attempt of this flow, or a view read by it) to this result."""
        for key in ("num_input_rows", "num_output_rows", "num_upserted_rows", "num_deleted_rows", "num_rescued_rows"):
            theirs = getattr(other, key)
            if theirs is not None:
                setattr(self, key, (getattr(self, key) or 0) + theirs)
        self.planning = other.planning if other.planning is not None else self.planning
        self.dropped_records += other.dropped_records
        self.batches += other.batches
        self.seconds += other.seconds
        self.expectations = add_expectations(self.expectations, other.expectations)
        self.sources = add_sources(self.sources, other.sources)
        for engine, count in other.commits.items():
            self.commits[engine] = self.commits.get(engine, 0) + count
        self.spark_commit_reason = other.spark_commit_reason or self.spark_commit_reason

    @property
    def rows_out(self) -> int | None:
        """Rows written: output rows, or upserted rows for APPLY CHANGES targets."""
        return self.num_upserted_rows if self.num_upserted_rows is not None else self.num_output_rows


@dataclass
class UpdateResult:
    """The outcome of one update. ``run_update`` returns it for every failure in pipeline code or data."""

    update_id: str
    succeeded: bool
    flows: list[FlowResult]
    seconds: float
    storage: StoragePath  # a local folder or an object-store URL
    event_log: StoragePath
    report: StoragePath | None = None  # the HTML report (local, or on the object store of the storage root)
    error: BaseException | None = None
    kinds: dict[str, str] = field(default_factory=dict)
    small_update: str | None = None  # why the small_updates settings applied (conf/spark.yaml); None if not

    def flow(self, name: str) -> FlowResult:
        """The result of the flow called ``name`` (case-insensitive)."""
        return next(f for f in self.flows if f.flow.lower() == name.lower())


def add_expectations(total: list[ExpectationResult], more: list[ExpectationResult]) -> list[ExpectationResult]:
    """Pass and fail counts of the same expectations added up, by name (the first one's order kept)."""
    by_name = {e.name: e for e in total}
    for e in more:
        old = by_name.get(e.name)
        by_name[e.name] = e if old is None else ExpectationResult(
            e.name, e.dataset, old.passed_records + e.passed_records, old.failed_records + e.failed_records,
            e.action)
    return list(by_name.values())


def source_offsets(progresses: list[Any]) -> list[dict[str, Any]]:
    """Each source of a streaming query's committed micro-batches (``StreamingQuery.recentProgress``) with the
    offsets it read from and up to: the first batch's start offset and the last batch's end offset (for a
    database source, the watermarks and the count of rows without one; for files, the log's batch ids).
    Batches without data are left out, so a run that read nothing reports nothing."""
    found: dict[int, dict[str, Any]] = {}
    for progress in progresses:
        if not progress.numInputRows:
            continue
        for index, source in enumerate(progress.sources):
            entry = found.setdefault(index, {"description": source.description,
                                             "start_offset": _offset(source.startOffset), "num_input_rows": 0})
            entry["end_offset"] = _offset(source.endOffset)
            entry["num_input_rows"] += int(source.numInputRows or 0)
    return [found[i] for i in sorted(found)]


def _offset(value: Any) -> Any:
    """An offset as Spark reports it (JSON text, or None before the first batch) as a JSON value."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def add_sources(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sources of two runs of one flow, by position (a source's description names a query's object): the
    first run's start offsets, the last run's end offsets, the rows of both."""
    merged = [dict(s) for s in ours]
    for index, source in enumerate(theirs):
        if index < len(merged):
            merged[index]["end_offset"] = source["end_offset"]
            merged[index]["num_input_rows"] += source["num_input_rows"]
        else:
            merged.append(dict(source))
    return merged

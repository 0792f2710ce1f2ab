"""The incremental techniques' writes: ``APPEND_ONLY`` appends the query of the appended rows,
``GROUP_AGGREGATE`` writes the view with the changed groups merged in (``merge.py``). Each is one Delta commit
carrying the refresh's ``txn``, after the refresh record (``state.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from framework.incremental.analysis import APPEND_ONLY, GROUP_AGGREGATE
from framework.incremental.merge import merged_view
from framework.quality.engine import apply_expectations

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from framework.incremental.changes import Change
    from framework.incremental.refresh import ViewRefresh
    from framework.runner.results import FlowResult


def run_technique(refresh: ViewRefresh, technique: str, changes: list[Change], result: FlowResult) -> None:
    """Refresh the view with ``technique`` from ``changes`` and record what it wrote in ``result``."""
    ex = refresh.ex
    changed = ex._conform(refresh.changed_query(changes))
    if technique == APPEND_ONLY:
        out, observation = apply_expectations(changed, ex.expectations, dataset=ex._dataset_name(),
                                              flow=ex.flow.name, rescued_column=ex._rescued_column())
        _write(refresh, out, "append")
        ex._record(result, dict(observation.get), batches=1)
    elif technique == GROUP_AGGREGATE:
        assert refresh.analysis is not None
        existing = refresh.spark.read.format("delta").load(refresh.path)
        merged = merged_view(existing, changed, refresh.analysis.columns).localCheckpoint(eager=True)
        _write(refresh, merged, "overwrite")
        ex._restore_clustering(refresh.path)
        result.num_output_rows = merged.count()
        result.batches = 1
    else:
        raise ValueError(f"no incremental technique {technique}")
    result.num_input_rows = sum(c.appended_rows for c in changes)
    result.status = "COMPLETED"


def _write(refresh: ViewRefresh, df: DataFrame, mode: str) -> None:
    refresh.before_commit()
    ex = refresh.ex
    writer = df.write.format("delta").mode(mode).options(**ex._delta_options()).options(**refresh.writer_options())
    if ex.dataset is not None and ex.dataset.partition_cols:
        writer = writer.partitionBy(*ex.dataset.partition_cols)
    writer.save(refresh.path)

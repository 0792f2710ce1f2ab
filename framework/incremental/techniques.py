"""The incremental techniques' writes: ``APPEND_ONLY`` appends the query of the appended rows, ``ROW_BASED``
the join rule's new rows (``ViewRefresh.row_based_query``), ``WINDOW_FUNCTION`` and ``PARTITION_OVERWRITE``
replace the touched keys' rows with the query over those keys (``keyed.py``; a small view on the driver,
``arrow_keyed.py``),
``GROUP_AGGREGATE`` merges the changed groups' partial aggregates into the view (a small view on the driver,
``arrow_merge.py``: one Spark job, the partial aggregate; else a Delta MERGE, ``merge.py``). Each is one Delta
commit carrying the refresh's ``txn``, after the refresh record (``state.py``).

Small writes go through the driver's Delta writer (``framework/storage/driver.py``) as a small full recompute
does: a Spark Delta write of a few thousand rows costs 1.3-1.8 s on a loaded two-core machine (measured), the
driver's milliseconds plus the collect; a table only Spark writes (a layout, a large result) gets Spark's."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from framework.incremental.analysis import (
    APPEND_ONLY,
    GROUP_AGGREGATE,
    PARTITION_OVERWRITE,
    ROW_BASED,
    WINDOW_FUNCTION,
)
from framework.incremental.arrow_keyed import replace_on_driver, rewrite_on_driver
from framework.incremental.arrow_merge import mergeable_keys, merged_rows
from framework.incremental.merge import merge_into
from framework.quality.engine import apply_expectations

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from framework.incremental.changes import Change
    from framework.incremental.keyed import Keyed
    from framework.incremental.refresh import ViewRefresh
    from framework.runner.results import FlowResult


def run_technique(refresh: ViewRefresh, technique: str, changes: list[Change], result: FlowResult) -> None:
    """Refresh the view with ``technique`` from ``changes`` and record what it wrote in ``result``."""
    ex = refresh.ex
    assert refresh.changed is not None
    conformed = ex._conform(refresh.changed)
    if technique == ROW_BASED and refresh.join_keyed is not None:  # by the join key (join_keyed.py)
        _keyed_recompute(refresh, refresh.join_keyed, result)
    elif technique == ROW_BASED and (any(c.feed for c in changes) or refresh.keyed_terms):
        _row_based_signed(refresh, result)
    elif technique in (APPEND_ONLY, ROW_BASED):
        on_driver = refresh.row_based_rows if technique == ROW_BASED else lambda: refresh.changed_rows(conformed)
        if not _append_evaluated(refresh, conformed, result, on_driver):
            _append_on_spark(refresh, technique, result)
    elif technique == GROUP_AGGREGATE and technique in refresh.keyed:  # the changed groups recomputed
        _keyed_recompute(refresh, refresh.keyed[technique], result)
    elif technique == GROUP_AGGREGATE:
        result.num_output_rows = _group_aggregate(refresh, conformed)
        result.batches = 1
    elif technique in (WINDOW_FUNCTION, PARTITION_OVERWRITE):
        _keyed_recompute(refresh, refresh.keyed[technique], result)
    else:
        raise ValueError(f"no incremental technique {technique}")
    result.num_input_rows = sum(c.appended_rows for c in changes)
    result.status = "COMPLETED"


def _append_on_spark(refresh: ViewRefresh, technique: str, result: FlowResult) -> None:
    """The new rows' query with the view's expectations, appended (by the driver when small, ``_write``)."""
    ex = refresh.ex
    new_rows = refresh.row_based_query() if technique == ROW_BASED else refresh.changed
    assert new_rows is not None
    out, observation = apply_expectations(ex._conform(new_rows), ex.expectations, dataset=ex._dataset_name(),
                                          flow=ex.flow.name, rescued_column=ex._rescued_column())
    _write(refresh, out, "append")
    ex._record(result, dict(observation.get), batches=1)


def _row_based_signed(refresh: ViewRefresh, result: FlowResult) -> None:
    """``ROW_BASED`` after updates or deletes (``feed.py``): the view plus the added rows, less the removed ones
    (multisets), rewritten in one overwrite carrying the refresh's ``txn``."""
    from framework.incremental.feed import signed_queries

    ex = refresh.ex
    added, removed = signed_queries(refresh)
    view = refresh.spark.read.format("delta").load(refresh.path)
    columns = [f"`{c.replace('`', '``')}`" for c in view.columns]
    out = view.unionAll(ex._conform(added).select(*columns)).exceptAll(ex._conform(removed).select(*columns))
    refresh.before_commit()
    writer = out.write.format("delta").mode("overwrite").options(**ex._delta_options()) \
        .options(**refresh.writer_options())
    if ex.dataset is not None and ex.dataset.partition_cols:
        writer = writer.partitionBy(*ex.dataset.partition_cols)
    writer.save(refresh.path)
    result.num_output_rows = _written_rows(refresh.path)
    result.batches = 1


def _keyed_recompute(refresh: ViewRefresh, keyed: Keyed, result: FlowResult) -> None:
    """The keyed recomputes (``keyed.py``, ``join_keyed.py``): the query over the inputs as planned, for the
    touched key values only, replaces the view's rows of those values in one commit carrying the refresh's
    ``txn``: the driver's for a small view (``arrow_keyed.py``), else a ``replaceWhere`` (a partition overwrite
    when the keys partition the view)."""
    ex, predicate = refresh.ex, keyed.predicate()
    out, observation = apply_expectations(ex._conform(refresh.full_query().where(predicate)), ex.expectations,
                                          dataset=ex._dataset_name(), flow=ex.flow.name,
                                          rescued_column=ex._rescued_column())
    if not replace_on_driver(refresh, out, keyed):
        refresh.before_commit()
        writer = out.write.format("delta").mode("overwrite").option("replaceWhere", predicate) \
            .options(**ex._delta_options()).options(**refresh.writer_options())
        if ex.dataset is not None and ex.dataset.partition_cols:
            writer = writer.partitionBy(*ex.dataset.partition_cols)
        writer.save(refresh.path)
    ex._record(result, dict(observation.get), batches=1)


def _group_aggregate(refresh: ViewRefresh, partial: DataFrame) -> int | None:
    """Merge the changed groups' partial aggregates into the view: on the driver for a small view, else by a
    Delta MERGE (``merge.py``). Returns the view's rows written."""
    assert refresh.analysis is not None and refresh.txn is not None
    rows = _merge_on_driver(refresh, partial)
    if rows is not None:
        return rows
    refresh.before_commit()
    merge_into(refresh.path, partial, refresh.analysis.columns, refresh.txn)
    return _written_rows(refresh.path)


def _merge_on_driver(refresh: ViewRefresh, partial: DataFrame) -> int | None:
    """``arrow_merge.py``'s merge of a small view on the driver (``arrow_keyed.rewrite_on_driver``), the partial
    aggregates collected. None: Spark merges (nothing committed)."""
    columns = refresh.analysis.columns if refresh.analysis is not None else ()
    if not mergeable_keys(partial.schema, columns):
        return None
    return rewrite_on_driver(refresh, partial, lambda: refresh.changed_rows(partial),
                             lambda existing, new: merged_rows(existing, new, columns, new.schema))


def _write(refresh: ViewRefresh, df: DataFrame, mode: str) -> None:
    refresh.before_commit()
    ex = refresh.ex
    if mode == "append" and _append_on_driver(refresh, df):
        return
    writer = df.write.format("delta").mode(mode).options(**ex._delta_options()).options(**refresh.writer_options())
    if ex.dataset is not None and ex.dataset.partition_cols:
        writer = writer.partitionBy(*ex.dataset.partition_cols)
    writer.save(refresh.path)


def _append_evaluated(refresh: ViewRefresh, df: DataFrame, result: FlowResult,
                      new_rows: Callable[[], pa.Table | None]) -> bool:
    """APPEND_ONLY or ROW_BASED without a Spark job: ``new_rows`` (``ViewRefresh.changed_rows`` /
    ``row_based_rows``; None: not on the driver) appended by the driver, for a view without expectations (their
    counts come from a Spark observation) the storage policy lets the driver append to (``df``: the new rows'
    query, for their columns). False: nothing done."""
    from framework.storage.driver import NeedsSpark, append_arrow
    from framework.storage.plain import input_bytes
    from framework.storage.policy import choose

    ex = refresh.ex
    rescued = ex._rescued_column()
    if ex.expectations or ex.reader.views or (rescued is not None and rescued in df.columns) or \
            not ex._plain_layout() or not choose(refresh.path, df.schema, kind="append", max_bytes=ex.env.small_input_bytes,
                                                 data_bytes=lambda: input_bytes(df)).driver:
        return False
    rows = new_rows()
    if rows is None:
        return False
    refresh.before_commit()
    try:
        append_arrow(refresh.path, df.schema, rows, txn=refresh.txn)
    except NeedsSpark:
        return False
    ex._record(result, {"total": rows.num_rows}, batches=1)
    return True


def _append_on_driver(refresh: ViewRefresh, df: DataFrame) -> bool:
    """Append ``df`` with the driver's writer when the view's layout and the appended input are small enough."""
    from framework.storage.driver import NeedsSpark, append_arrow
    from framework.storage.plain import input_bytes
    from framework.storage.policy import choose

    ex = refresh.ex
    if not ex._plain_layout() or not choose(refresh.path, df.schema, kind="append", max_bytes=ex.env.small_input_bytes,
                                            data_bytes=lambda: input_bytes(df)).driver:
        return False
    try:
        append_arrow(refresh.path, df.schema, df.toArrow(), txn=refresh.txn)
    except NeedsSpark:
        return False
    return True


def _written_rows(path: str) -> int | None:
    """The rows the view's newest commit wrote (its ``operationMetrics``), read from its log."""
    from framework.storage.log import commit_actions, latest_version

    for action in commit_actions(path, latest_version(path) or 0) or []:
        info = action.get("commitInfo")
        if isinstance(info, dict):
            try:
                return int((info.get("operationMetrics") or {}).get("numOutputRows", 0))
            except (TypeError, ValueError):
                return None
    return None

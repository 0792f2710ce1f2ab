"""``ROW_BASED`` after updates and deletes, from the inputs' change data feed (``delta.enableChangeDataFeed``).

A query of inner joins, filters and projections is linear in each input, with changes as signed rows: each input
changed by ``+Δ`` (inserted rows and updates' new images) and ``-Δ`` (deleted rows and updates' old images), so
with the reads in call order the new view is the old view, plus, for each changed read ``i``, the query with read
``i`` as ``+Δ``, minus the query with read ``i`` as ``-Δ``, the reads before ``i`` as their inputs were at the
last refresh and those after it as they are now (two inputs: ``V + (ΔA ⋈ B_new) + (A_old ⋈ ΔB)``, each Δ signed).
Every subtracted row is in the old view or among the added rows, so the new view is ``(V UNION ALL added)
EXCEPT ALL removed``, as multisets (NULLs equal, as set operations compare them), rewritten in one commit. An
input appended to only is a ``+Δ`` of its appended files. Views with expectations are not refreshed this way
(a dropped row's removal would have to be dropped the same way; ``refresh.py`` reports it).
"""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.incremental.changes import Change, Snapshot
    from framework.incremental.refresh import ViewRefresh

_FEED_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")


def signed_queries(refresh: ViewRefresh) -> tuple[DataFrame, DataFrame]:
    """The rows the refresh adds to the view and those it removes (see the module's docstring)."""
    added: list[DataFrame] = []
    removed: list[DataFrame] = []
    for i, path in enumerate(refresh.read_paths):
        change = refresh.input_changes[path]
        if change.appended or change.feed:
            added.append(refresh._query(_term_read(refresh, i, positive=True)))
            removed.append(refresh._query(_term_read(refresh, i, positive=False)))
    if not added:
        raise ValueError("no changed input to refresh from")
    return reduce(lambda a, b: a.unionAll(b), added), reduce(lambda a, b: a.unionAll(b), removed)


def _term_read(refresh: ViewRefresh, term: int, *, positive: bool) -> Any:
    calls = iter(range(len(refresh.read_paths) + 1))

    def read(key: str, path: str) -> DataFrame:
        call = refresh.next_read(calls, path)
        snap, change = refresh.snapshots[path], refresh.input_changes[path]
        if call == term:
            return changed_rows(refresh.spark, snap, change, positive=positive)
        if call < term:
            return refresh.spark.read.format("delta").option("versionAsOf", change.seen).load(path)
        return snap.read(refresh.spark, max_plain_bytes=refresh.ex.env.small_input_bytes)

    return read


def changed_rows(spark: SparkSession, snap: Snapshot, change: Change, *, positive: bool) -> DataFrame:
    """An input's ``+Δ`` (``positive``) or ``-Δ`` since the last refresh, with the input's columns."""
    from pyspark.sql import functions as F

    if not change.feed:
        return snap.read(spark, change.appended if positive else ())
    kinds = ("insert", "update_postimage") if positive else ("delete", "update_preimage")
    feed = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", change.seen + 1) \
        .option("endingVersion", snap.version).load(snap.path)
    return feed.where(F.col("_change_type").isin(*kinds)).drop(*_FEED_COLUMNS)

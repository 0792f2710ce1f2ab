"""``ROW_BASED`` after updates and deletes, from the inputs' change data feed (``delta.enableChangeDataFeed``).

A query of inner joins, filters and projections is linear in each input, with changes as signed rows: each input
changed by ``+Δ`` (inserted rows and updates' new images) and ``-Δ`` (deleted rows and updates' old images), so
with the reads in call order the new view is the old view, plus, for each changed read ``i``, the query with read
``i`` as ``+Δ``, minus the query with read ``i`` as ``-Δ``, the reads before ``i`` as their inputs were at the
last refresh and those after it as they are now (two inputs: ``V + (ΔA ⋈ B_new) + (A_old ⋈ ΔB)``, each Δ signed).

A left, right, semi or anti join is linear in the side it preserves but not in the other side, ``B`` (alone there):
a row of ``B`` can replace the NULL-padded row of an ``A`` row. When the join condition equates a column ``B.y``
with a column ``A.x`` of a relation on the preserved side (``analysis.JoinKey``), an ``A`` row whose ``x`` is not
among the ``y`` values of ``B``'s changed rows (``K``) matches the same ``B`` rows before and after, so ``B``'s
term is the query with ``B`` as it is now minus the query with ``B`` as it was, both with ``A`` restricted to the
rows with ``x`` in ``K`` (``Q(A|K, B_new) - Q(A|K, B_old)``; ``A`` as in any term, null-safe: a superset of the
rows that can change is exact). Every ``A`` must be linear in the query (on no join's non-preserved side).
Every subtracted row is in the old view or among the added rows, so the new view is ``(V UNION ALL added)
EXCEPT ALL removed``, as multisets (NULLs equal, as set operations compare them), rewritten in one commit. An
input appended to only is a ``+Δ`` of its appended files. Views with expectations are not refreshed this way
(a dropped row's removal would have to be dropped the same way; ``refresh.py`` reports it).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import TYPE_CHECKING, Any

from framework.incremental.analysis import Analysis, Issue

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.incremental.changes import Change, Snapshot
    from framework.incremental.refresh import ViewRefresh

_FEED_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
_KEY = "__mv_changed_key"


@dataclass(frozen=True)
class KeyedTerm:
    """The term of a changed read on a join's non-preserved side: the preserved read (its position) restricted
    to the rows whose ``preserved_column`` is among the changed rows' ``fixed_column`` values."""

    preserved_read: int
    preserved_column: str
    fixed_column: str


def keyed_terms(analysis: Analysis, reads: list[tuple[str, int | None]],
                changes: dict[str, Change]) -> tuple[dict[int, KeyedTerm], list[Issue]]:
    """The keyed terms of the reads (path, first column id) on a join's non-preserved side that changed, or why
    such a change stops ``ROW_BASED``."""
    terms: dict[int, KeyedTerm] = {}
    issues: list[Issue] = []
    ids = [read_id for _, read_id in reads]
    for i, (path, read_id) in enumerate(reads):
        change = changes.get(path)
        if read_id not in analysis.fixed or (change is not None and change.unchanged):
            continue
        kind, key = analysis.fixed[read_id], analysis.fixed_keys.get(read_id)
        if key is None or key.preserved not in ids or key.preserved in analysis.fixed:
            issues.append(Issue("JOIN_TYPE_NOT_SUPPORTED", f"{path} changed on the side a {kind} join does not "
                                "preserve, and the join condition equates none of its columns with a column of "
                                "an input the query is linear in: its new rows can change rows the view holds"))
        else:
            terms[i] = KeyedTerm(ids.index(key.preserved), key.preserved_column, key.fixed_column)
    return terms, issues


def keyed_cost(refresh: ViewRefresh, terms: dict[int, KeyedTerm]) -> int:
    """The cost of the signed refresh with keyed terms: the view read and rewritten; per changed read its
    change (a keyed read: the input before and after) and every other input whole."""
    total = sum(refresh.snapshots[p].table_bytes for p in dict.fromkeys(refresh.read_paths))
    cost = 2 * max(refresh.view_bytes, 0)
    for i, path in enumerate(refresh.read_paths):
        change, size = refresh.input_changes[path], refresh.snapshots[path].table_bytes
        if i in terms:
            cost += total + size
        elif change.appended or change.feed:
            cost += change.appended_bytes + total - size
    return cost


def signed_queries(refresh: ViewRefresh) -> tuple[DataFrame, DataFrame]:
    """The rows the refresh adds to the view and those it removes (see the module's docstring)."""
    added: list[DataFrame] = []
    removed: list[DataFrame] = []
    for i, path in enumerate(refresh.read_paths):
        change = refresh.input_changes[path]
        if i in refresh.keyed_terms or change.appended or change.feed:
            added.append(refresh._query(_term_read(refresh, i, positive=True)))
            removed.append(refresh._query(_term_read(refresh, i, positive=False)))
    if not added:
        raise ValueError("no changed input to refresh from")
    return reduce(lambda a, b: a.unionAll(b), added), reduce(lambda a, b: a.unionAll(b), removed)


def _term_read(refresh: ViewRefresh, term: int, *, positive: bool) -> Any:
    calls = iter(range(len(refresh.read_paths) + 1))
    keyed = refresh.keyed_terms.get(term)
    keys = _changed_keys(refresh, term, keyed.fixed_column) if keyed is not None else None

    def read(key: str, path: str) -> DataFrame:
        call = refresh.next_read(calls, path)
        snap, change = refresh.snapshots[path], refresh.input_changes[path]
        if call == term and keyed is None:
            return changed_rows(refresh.spark, snap, change, positive=positive)
        old = call < term or (call == term and not positive)
        df = refresh.spark.read.format("delta").option("versionAsOf", change.seen).load(path) if old else \
            snap.read(refresh.spark, max_plain_bytes=refresh.ex.env.small_input_bytes)
        if keyed is not None and keys is not None and call == keyed.preserved_read:
            column = df[f"`{keyed.preserved_column.replace('`', '``')}`"]
            return df.join(keys, column.eqNullSafe(keys[_KEY]), "left_semi")
        return df

    return read


def _changed_keys(refresh: ViewRefresh, term: int, column: str) -> DataFrame:
    """The ``column`` values of the read's changed rows (added and removed), as one column ``_KEY``."""
    from pyspark.sql import functions as F

    path = refresh.read_paths[term]
    snap, change = refresh.snapshots[path], refresh.input_changes[path]
    quoted = f"`{column.replace('`', '``')}`"
    return reduce(lambda a, b: a.unionAll(b), (
        changed_rows(refresh.spark, snap, change, positive=p).select(F.col(quoted).alias(_KEY)) for p in (True, False)))


def changed_rows(spark: SparkSession, snap: Snapshot, change: Change, *, positive: bool) -> DataFrame:
    """An input's ``+Δ`` (``positive``) or ``-Δ`` since the last refresh, with the input's columns."""
    from pyspark.sql import functions as F

    if not change.feed:
        return snap.read(spark, change.appended if positive else ())
    kinds = ("insert", "update_postimage") if positive else ("delete", "update_preimage")
    feed = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", change.seen + 1) \
        .option("endingVersion", snap.version).load(snap.path)
    return feed.where(F.col("_change_type").isin(*kinds)).drop(*_FEED_COLUMNS)

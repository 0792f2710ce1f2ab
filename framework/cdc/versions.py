"""SCD 2 versions rebuilt from a key's timeline, and what changed against the target (pure DataFrame plans).

A timeline row is one applied or new event of a key: keys, ``__seq``, ``__op``, the value columns and

* ``__old`` / ``__old_end`` / ``__oldv``: the row is a version of the target (opened at this sequence), with its
  ``__END_AT`` and the values the target holds for it (its latest upsert's);
* ``__new``: an event of this batch at a sequence the timeline did not have;
* ``__stored``: the row is in the ``upserts`` state table, so its values are the event's own.

Rules (Databricks' documented SCD 2 semantics, reference/SEMANTICS.md §3): an upsert opens a version when it
follows a delete or nothing, or when a tracked column differs from the previous upsert's; otherwise it updates the
open version in place (the version keeps its ``__START_AT`` and takes the values of its latest upsert). A version
ends at the sequence of the next delete or opening upsert.

Why ``upserts``: a target row keeps only its version's latest values, so a version that absorbed in-place updates
(untracked columns changed, or identical upserts) has lost the sequences and values of the events it absorbed. A
late event that lands inside it must neither win over a newer one nor split it wrongly, so every upsert of a version
with more than one upsert is kept in ``upserts`` (rows marked ``history`` here). A version opened by one upsert is
fully described by its target row and costs no state.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from framework.cdc.columns import ACTION, END_AT, START_AT, ColumnPlan
from framework.cdc.events import DELETE, OP, SEQ, UPSERT

OLD = "__old"
OLD_END = "__old_end"
OLD_VALUES = "__oldv"
NEW = "__new"
STORED = "__stored"
HISTORY = "history"  # the __action of a row that goes to the ``upserts`` state table
VERSION_ACTIONS = ("insert", "update", "delete")  # the __action values that change the target


def differs(left: Column, right: Column) -> Column:
    """NULL-safe inequality."""
    return ~left.eqNullSafe(right)


def _marked(timeline: DataFrame, plan: ColumnPlan) -> DataFrame:
    """The timeline with ``__opens`` (the row opens a version) and ``__keep`` (the row goes to ``upserts``: an upsert
    not stored yet, of a version with more than one upsert)."""
    ordered = Window.partitionBy(*plan.keys).orderBy(SEQ)
    tracked = F.struct(*[F.col(c) for c in plan.tracked]) if plan.tracked else F.lit(0)
    previous_op = F.lag(OP).over(ordered)
    opens = (F.col(OP) == UPSERT) & (
        previous_op.isNull() | (previous_op == DELETE) | differs(F.lag(tracked).over(ordered), tracked)
    )
    absorbed = (F.col(OP) == UPSERT) & ~F.col("__opens")
    # an absorbed upsert follows its version's opener or another absorbed upsert (a delete ends the version)
    in_shared_version = absorbed | F.coalesce(F.lead(absorbed).over(ordered), F.lit(False))
    return timeline.withColumn("__opens", opens).withColumn(
        "__keep", (F.col(OP) == UPSERT) & ~F.col(STORED) & in_shared_version
    )


def _old_values_differ(plan: ColumnPlan, prefix: str = "") -> Column:
    changed: Column = F.lit(False)
    for c in plan.values:
        changed = changed | differs(F.col(f"{prefix}{c}"), F.col(f"{OLD_VALUES}.{c}"))
    return changed


def changes_single_pass(timeline: DataFrame, plan: ColumnPlan) -> DataFrame:
    """Every column tracked: a version's values are its first upsert's, so one window pass suffices.

    A version ends at the next boundary (a delete or an upsert that opens a version). The rows kept are the
    openers (insert when new, update when their end or values moved), old versions that no longer open one
    (delete), the batch's new deletes (tombstone) and the upserts ``upserts`` must keep (history).
    """
    keys = list(plan.keys)
    partition = ", ".join(f"`{k}`" for k in keys)
    next_boundary = F.expr(f"lead(__boundary) IGNORE NULLS OVER (PARTITION BY {partition} ORDER BY {SEQ})")
    marked = (
        _marked(timeline, plan)
        .withColumn("__boundary", F.when((F.col(OP) == DELETE) | F.col("__opens"), F.col(SEQ)))
        .withColumn(END_AT, next_boundary)
    )
    action = (
        F.when(F.col("__opens") & ~F.col(OLD), F.lit("insert"))
        .when(
            F.col("__opens") & (differs(F.col(END_AT), F.col(OLD_END)) | _old_values_differ(plan)),
            F.lit("update"),
        )
        .when(F.col(OLD) & (F.col(OP) == UPSERT) & ~F.col("__opens"), F.lit("delete"))
        .when(F.col(NEW) & (F.col(OP) == DELETE), F.lit("tombstone"))
    )
    actions = F.array_compact(F.array(action, F.when(F.col("__keep"), F.lit(HISTORY))))
    return marked.withColumn(ACTION, F.explode(actions)).select(
        *keys, *plan.values, F.col(SEQ).alias(START_AT), END_AT, ACTION
    )


def changes(timeline: DataFrame, plan: ColumnPlan) -> DataFrame:
    """Rebuild the versions of the timeline's keys and keep only new, changed and vanished ones (and the upserts
    ``upserts`` must keep); the batch's new deletes are not included (see ``Scd2Applier``).

    A rebuilt version whose first upsert is an old version is an update (if its end or values changed), one whose
    first upsert is not is an insert, and an old version that no longer opens one (coalesced into an earlier one)
    is a delete. So the diff with the target needs no second read of it.
    """
    keys = list(plan.keys)
    ordered = Window.partitionBy(*keys).orderBy(SEQ)
    running = ordered.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    marked = (
        _marked(timeline, plan)
        .withColumn("__next", F.lead(SEQ).over(ordered))
        .withColumn("__vid", F.sum(F.col("__opens").cast("int")).over(running))
        .filter(F.col(OP) == UPSERT)
    )
    values = [F.col(c) for c in plan.values]
    grouped = marked.groupBy(*keys, "__vid").agg(
        F.min(SEQ).alias(START_AT),
        F.max_by("__next", SEQ).alias(END_AT),
        F.max_by(F.struct(*values, F.lit(0).alias("__pad")), SEQ).alias("__v"),
        F.min_by(F.struct(F.col(OLD), F.col(OLD_END), F.col(OLD_VALUES)), SEQ).alias("__first"),
    )
    first = grouped.select("*", F.col(f"__first.{OLD_VALUES}").alias(OLD_VALUES))
    changed = differs(F.col(END_AT), F.col(f"__first.{OLD_END}")) | _old_values_differ(plan, "__v.")
    action = F.when(~F.col(f"__first.{OLD}"), F.lit("insert")).when(changed, F.lit("update"))
    rebuilt = first.select(
        *keys, *[F.col(f"__v.{c}").alias(c) for c in plan.values], START_AT, END_AT, action.alias(ACTION)
    ).filter(F.col(ACTION).isNotNull())
    per_row = F.array_compact(
        F.array(
            F.when(F.col(OLD) & ~F.col("__opens"), F.lit("delete")), F.when(F.col("__keep"), F.lit(HISTORY))
        )
    )
    rows = marked.withColumn(ACTION, F.explode(per_row)).select(
        *keys, *values, F.col(SEQ).alias(START_AT), F.col(OLD_END).alias(END_AT), ACTION
    )
    return rebuilt.unionByName(rows)

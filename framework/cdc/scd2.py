"""SCD type 2: the target holds every version of a row with ``__START_AT`` / ``__END_AT``.

Hidden state: ``tombstones`` (keys, ``__seq``), append-only, every delete event applied. With the target's versions
(each an upsert at its ``__START_AT``) they are the full timeline of a key, so history can be rebuilt exactly.

Per batch, only keys that have events in the batch are touched:

1. events → one row per (key, sequence) (identical duplicates collapse, conflicting ones are refused);
2. timeline = the key's existing versions + its tombstones + the batch's new events (an event at a sequence the
   timeline already has is ignored: the first event applied at a sequence wins);
3. versions are rebuilt with window functions: an upsert opens a new version when it follows a delete or nothing,
   or when a tracked column differs from the previous upsert; otherwise it updates the version in place.
   ``__END_AT`` is the sequence of the event that follows the version's last upsert (a delete or the next version);
4. existing versions travel through the timeline flagged as old, so the rebuilt versions are diffed with them
   without reading the target again; only new, changed or vanished versions (plus the batch's new tombstones) are
   materialized once, and go into one Delta MERGE on (keys, ``__START_AT``) (with deletion vectors, so untouched
   rows are not rewritten);
5. the batch's new deletes are appended to ``tombstones``.

Known gap: an existing version only remembers its latest values, so a late event that lands inside a version that
already absorbed in-place (untracked-only) updates, or inside a run of identical upserts that were coalesced,
cannot split that run exactly as if it had arrived in order.
"""

from __future__ import annotations

from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from framework.cdc.columns import ACTION, END_AT, START_AT, ColumnPlan
from framework.cdc.context import (
    TargetContext,
    key_join,
    materialize,
    merge_counts,
    merge_metrics,
    quote,
    release,
)
from framework.cdc.events import (
    COUNT,
    DELETE,
    OP,
    PROBLEM,
    SEQ,
    UPSERT,
    dedup_events,
    materialize_checked,
    set_flag,
)
from framework.cdc.metrics import CdcMetrics
from framework.cdc.small import append_small, commit_versions, create_small, read_pinned, small_version
from framework.small_tables import row_bytes

OLD = "__old"
OLD_END = "__old_end"
NEW = "__new"


def _differs(left: Column, right: Column) -> Column:
    return ~left.eqNullSafe(right)


class Scd2Applier:
    """Applies batches of prepared events to an SCD 2 target."""

    def __init__(self, ctx: TargetContext, plan: ColumnPlan, is_masked: bool,
                 new_target: StructType | None = None) -> None:
        self.ctx = ctx
        self.plan = plan
        self.is_masked = is_masked
        self.tombstones_path = ctx.state_table("tombstones")
        # The schema of a target that does not exist yet (a first load): nothing to read back, nothing to match,
        # and the batch's append creates it.
        self.new_target = new_target
        self.pinned = False  # this batch reads the target and tombstones from their files (framework.cdc.small)
        self.target_rows: DataFrame | None = None  # the target as this batch read it, when pinned

    def apply(self, events: DataFrame, batch_id: int, app_id: str) -> CdcMetrics:
        """Apply one batch of prepared events (see ``events.prepare_events``)."""
        reduced, num_input, num_deletes = materialize_checked(
            dedup_events(events, self.plan, self.is_masked), events, self.plan, self.ctx.name)
        try:
            # a small target is read from its files and committed by the driver (framework.cdc.small)
            version = None if self.new_target is not None else small_version(self.ctx)
            self.pinned = version is not None
            target_schema, timeline = self._timeline(reduced.drop(PROBLEM, COUNT))
            if self.is_masked:
                timeline = self._fill(timeline)
            changes = self._all_changes(timeline, target_schema)
            if version is not None:
                counts = self._apply_small(changes, batch_id, app_id, version, num_deletes)
            elif self.new_target is not None and num_input * row_bytes(reduced) <= self.ctx.small_bytes:
                counts = self._create_small(changes, batch_id, app_id, num_deletes)
            else:
                counts = self._apply_spark(changes, batch_id, app_id, num_deletes)
        finally:
            release(reduced)
        metrics: CdcMetrics = merge_metrics(counts, num_deleted=num_deletes, num_input=num_input)
        return metrics

    def _all_changes(self, timeline: DataFrame, target_schema: StructType) -> DataFrame:
        """The MERGE source (new, changed and vanished versions) and the batch's new tombstones, one DataFrame."""
        if self.plan.tracked == self.plan.values:
            return self._changes_single_pass(timeline)
        keys = list(self.plan.keys)
        end_type = target_schema[END_AT].dataType
        tombstones = timeline.filter(F.col(NEW) & (F.col(OP) == DELETE)).select(
            *keys, *[F.lit(None).cast(target_schema[c].dataType).alias(c) for c in self.plan.values],
            F.col(SEQ).alias(START_AT), F.lit(None).cast(end_type).alias(END_AT),
            F.lit("tombstone").alias(ACTION))
        return self._changes(timeline).unionByName(tombstones)

    def _apply_spark(self, all_changes: DataFrame, batch_id: int, app_id: str,
                     num_deletes: int) -> dict[str, Any] | None:
        """Computed once (the target is scanned once per batch), then a MERGE (an append into a new target) and
        the tombstones' append, each idempotent under its own app id."""
        changes = materialize(all_changes)
        try:
            rows = changes.filter(F.col(ACTION) != "tombstone")
            counts = (self._append(rows, batch_id, app_id) if self.new_target is not None
                      else self._merge(rows, batch_id, app_id))
            if num_deletes:
                self.ctx.writer.append(self._tombstones(changes), self.tombstones_path, f"{app_id}/tombstones",
                                       batch_id)
        finally:
            release(changes)
        return counts

    def _tombstones(self, changes: DataFrame) -> DataFrame:
        return changes.filter(F.col(ACTION) == "tombstone").select(*self.plan.keys, F.col(START_AT).alias(SEQ))

    def _apply_small(self, all_changes: DataFrame, batch_id: int, app_id: str, version: int,
                     num_deletes: int) -> dict[str, Any] | None:
        """The same writes committed by the driver (``framework.cdc.small``); a MERGE when it must not."""
        from framework.driver_delta import NeedsSpark

        data = all_changes.toArrow()
        try:
            assert self.target_rows is not None  # read by _timeline
            counts = commit_versions(self.ctx, self.target_rows, list(self.plan.keys), data, version,
                                     (app_id, batch_id))
        except NeedsSpark:
            changes = self.ctx.spark.createDataFrame(data, all_changes.schema)
            counts = self._merge(changes.filter(F.col(ACTION) != "tombstone"), batch_id, app_id)
        if num_deletes:
            self._append_tombstones(data, all_changes.schema, batch_id, app_id)
        return counts

    def _create_small(self, all_changes: DataFrame, batch_id: int, app_id: str,
                      num_deletes: int) -> dict[str, Any] | None:
        """A small first load committed by the driver (``framework.cdc.small.create_small``): the new target
        created with its rows, every one an insert, as :meth:`_append` does through Spark."""
        import pyarrow.compute as pc

        data = all_changes.toArrow()
        columns = [*self.plan.output, START_AT, END_AT]
        rows = data.filter(pc.not_equal(data.column(ACTION), "tombstone")).select(columns)
        schema = StructType([all_changes.schema[c] for c in columns])
        if not create_small(self.ctx, schema, rows, (app_id, batch_id)):
            return self._apply_spark(self.ctx.spark.createDataFrame(data, all_changes.schema), batch_id, app_id,
                                     num_deletes)
        if num_deletes:
            self._append_tombstones(data, all_changes.schema, batch_id, app_id)
        return {"num_inserted_rows": rows.num_rows, "num_updated_rows": 0, "num_deleted_rows": 0}

    def _append_tombstones(self, data: Any, schema: StructType, batch_id: int, app_id: str) -> None:
        """Append the batch's new tombstones (the Arrow ``data`` of the changes, of ``schema``) with the driver, or
        through Spark when it must not."""
        import pyarrow.compute as pc
        from pyspark.sql.types import StructField

        keys = list(self.plan.keys)
        rows = (data.filter(pc.equal(data.column(ACTION), "tombstone")).select([*keys, START_AT])
                .rename_columns([*keys, SEQ]))
        tombstones = StructType([*(schema[k] for k in keys), StructField(SEQ, schema[START_AT].dataType)])
        txn = (f"{app_id}/tombstones", batch_id)
        if not append_small(self.ctx, self.tombstones_path, tombstones, rows, txn):
            self.ctx.writer.append(self.ctx.spark.createDataFrame(rows, tombstones), self.tombstones_path, txn[0],
                                   batch_id)

    def _timeline(self, new: DataFrame) -> tuple[StructType, DataFrame]:
        """The target's schema, and the timeline of the batch's keys: their existing versions and tombstones
        (flagged old) followed by the batch's events at sequences the timeline does not have yet (flagged new)."""
        keys = list(self.plan.keys)

        def flagged_new(events: DataFrame, schema: StructType) -> DataFrame:
            end_type = schema[END_AT].dataType
            return events.select(*new.columns, F.lit(False).alias(OLD), F.lit(None).cast(end_type).alias(OLD_END),
                                 F.lit(True).alias(NEW))

        tombstones = (read_pinned(self.ctx, self.tombstones_path) if self.pinned
                      else self.ctx.read_or_none(self.tombstones_path))
        if self.new_target is not None and tombstones is None:
            # A first load: nothing to read back, every event is new (building the joins against an empty
            # target would only cost analysis time, Spark's optimizer drops them anyway).
            return self.new_target, flagged_new(new, self.new_target)
        batch_keys = new.select(*keys).distinct()
        if self.new_target is not None:
            existing = self.ctx.spark.createDataFrame([], self.new_target)
        else:
            current = read_pinned(self.ctx, self.ctx.target_path) if self.pinned else None
            self.target_rows = current if current is not None else self.ctx.read(self.ctx.target_path)
            existing = self.target_rows.join(batch_keys, keys, "left_semi")
        old = self._old_events(existing, batch_keys, tombstones)
        fresh = flagged_new(new.join(old.select(*keys, SEQ), [*keys, SEQ], "left_anti"), existing.schema)
        return existing.schema, old.unionByName(fresh)

    def _old_events(self, existing: DataFrame, batch_keys: DataFrame, tombstones: DataFrame | None) -> DataFrame:
        """The timeline already applied for the batch's keys: versions as upserts, tombstones as deletes."""
        keys = list(self.plan.keys)
        sets = [F.lit(True).alias(set_flag(i)) for i in range(len(self.plan.values))] if self.is_masked else []
        versions = existing.select(*keys, F.col(START_AT).alias(SEQ), F.lit(UPSERT).cast("tinyint").alias(OP),
                                   *self.plan.values, *sets, F.lit(True).alias(OLD), F.col(END_AT).alias(OLD_END),
                                   F.lit(False).alias(NEW))
        if tombstones is None:
            return versions
        value_types = dict(existing.dtypes)
        deletes = tombstones.join(batch_keys, keys, "left_semi").select(
            *keys, SEQ, F.lit(DELETE).cast("tinyint").alias(OP),
            *[F.lit(None).cast(value_types[c]).alias(c) for c in self.plan.values], *sets,
            F.lit(False).alias(OLD), F.lit(None).cast(value_types[END_AT]).alias(OLD_END), F.lit(False).alias(NEW))
        return versions.unionByName(deletes)

    def _fill(self, timeline: DataFrame) -> DataFrame:
        """Ignore-NULL / columns_to_update: an unset column keeps the previous upsert's value (since the last delete)."""
        keys = list(self.plan.keys)
        ordered = Window.partitionBy(*keys).orderBy(SEQ).rowsBetween(Window.unboundedPreceding, Window.currentRow)
        timeline = timeline.withColumn("__segment", F.sum(F.when(F.col(OP) == DELETE, 1).otherwise(0)).over(ordered))
        segment = (Window.partitionBy(*keys, "__segment").orderBy(SEQ)
                   .rowsBetween(Window.unboundedPreceding, Window.currentRow))
        for i, name in enumerate(self.plan.values):
            chosen = F.when((F.col(OP) == UPSERT) & F.col(set_flag(i)), F.struct(F.col(name).alias("v")))
            timeline = timeline.withColumn(name, F.last(chosen, ignorenulls=True).over(segment).getField("v"))
        return timeline.drop("__segment", *[set_flag(i) for i in range(len(self.plan.values))])

    def _changes_single_pass(self, timeline: DataFrame) -> DataFrame:
        """Every column tracked: a version's values are its first upsert's, so one window pass suffices.

        A version ends at the next boundary (a delete or an upsert that opens a version). The rows kept are the
        openers (insert when new, update when their end moved), old upserts that no longer open a version
        (delete), and the batch's new deletes (tombstone).
        """
        keys = list(self.plan.keys)
        ordered = Window.partitionBy(*keys).orderBy(SEQ)
        tracked = F.struct(*[F.col(c) for c in self.plan.tracked]) if self.plan.tracked else F.lit(0)
        previous_op = F.lag(OP).over(ordered)
        opens = (F.col(OP) == UPSERT) & (previous_op.isNull() | (previous_op == DELETE)
                                         | _differs(F.lag(tracked).over(ordered), tracked))
        partition = ", ".join(f"`{k}`" for k in keys)
        next_boundary = F.expr(f"lead(__boundary) IGNORE NULLS OVER (PARTITION BY {partition} ORDER BY {SEQ})")
        marked = (timeline.withColumn("__opens", opens)
                  .withColumn("__boundary", F.when((F.col(OP) == DELETE) | F.col("__opens"), F.col(SEQ)))
                  .withColumn(END_AT, next_boundary))
        action = (F.when(F.col("__opens") & ~F.col(OLD), F.lit("insert"))
                  .when(F.col("__opens") & _differs(F.col(END_AT), F.col(OLD_END)), F.lit("update"))
                  .when(F.col(OLD) & (F.col(OP) == UPSERT) & ~F.col("__opens"), F.lit("delete"))
                  .when(F.col(NEW) & (F.col(OP) == DELETE), F.lit("tombstone")))
        return (marked.withColumn(ACTION, action).filter(F.col(ACTION).isNotNull())
                .select(*keys, *self.plan.values, F.col(SEQ).alias(START_AT), END_AT, ACTION))

    def _changes(self, timeline: DataFrame) -> DataFrame:
        """Rebuild the versions of the timeline's keys and keep only new, changed and vanished ones.

        Existing versions travel through the timeline as upserts flagged ``__old`` with their ``__END_AT``, so the
        diff with the target needs no second read of it: a rebuilt version whose first upsert is old is an update
        (if its end or values changed), one whose first upsert is new is an insert, and an old upsert that no
        longer opens a version (coalesced into an earlier one) is a delete.
        """
        keys = list(self.plan.keys)
        ordered = Window.partitionBy(*keys).orderBy(SEQ)
        running = ordered.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        tracked = F.struct(*[F.col(c) for c in self.plan.tracked]) if self.plan.tracked else F.lit(0)
        previous_op = F.lag(OP).over(ordered)
        opens = (F.col(OP) == UPSERT) & (previous_op.isNull() | (previous_op == DELETE)
                                         | _differs(F.lag(tracked).over(ordered), tracked))
        marked = (timeline.withColumn("__opens", opens)
                  .withColumn("__next", F.lead(SEQ).over(ordered))
                  .withColumn("__vid", F.sum(F.col("__opens").cast("int")).over(running))
                  .filter(F.col(OP) == UPSERT))
        values = [F.col(c) for c in self.plan.values]
        grouped = marked.groupBy(*keys, "__vid").agg(
            F.min(SEQ).alias(START_AT), F.max_by("__next", SEQ).alias(END_AT),
            F.max_by(F.struct(*values, F.lit(0).alias("__pad")), SEQ).alias("__v"),
            F.min_by(F.struct(F.col(OLD), F.col(OLD_END), *values), SEQ).alias("__first"))
        changed: Column = _differs(F.col(END_AT), F.col(f"__first.{OLD_END}"))
        for c in self.plan.values:
            changed = changed | _differs(F.col(f"__v.{c}"), F.col(f"__first.{c}"))
        action = F.when(~F.col(f"__first.{OLD}"), F.lit("insert")).when(changed, F.lit("update"))
        rebuilt = grouped.select(*keys, *[F.col(f"__v.{c}").alias(c) for c in self.plan.values], START_AT, END_AT,
                                 action.alias(ACTION)).filter(F.col(ACTION).isNotNull())
        vanished = marked.filter(F.col(OLD) & ~F.col("__opens")).select(
            *keys, *values, F.col(SEQ).alias(START_AT), F.col(OLD_END).alias(END_AT), F.lit("delete").alias(ACTION))
        return rebuilt.unionByName(vanished)

    def _append(self, diff: DataFrame, batch_id: int, app_id: str) -> dict[str, Any] | None:
        """Into a new target every row is an insert: an idempotent append (which creates it) instead of a MERGE."""
        inserts = diff.select(*self.plan.output, START_AT, END_AT)
        count = inserts.count()  # the rows are materialized: no recomputation
        self.ctx.writer.append(inserts, self.ctx.target_path, app_id, batch_id)
        return {"num_inserted_rows": count, "num_updated_rows": 0, "num_deleted_rows": 0}

    def _merge(self, diff: DataFrame, batch_id: int, app_id: str) -> dict[str, Any] | None:
        columns = [*self.plan.output, START_AT, END_AT]
        condition = f"{key_join(self.plan.keys)} AND t.{START_AT} = s.{START_AT}"
        update: dict[str, str | Column] = {quote(c): f"s.{quote(c)}" for c in [*self.plan.values, END_AT]}
        insert: dict[str, str | Column] = {quote(c): f"s.{quote(c)}" for c in columns}

        def run(session: SparkSession) -> Any:
            return (DeltaTable.forPath(session, self.ctx.target_path).alias("t")
                    .merge(diff.alias("s"), condition)
                    .whenMatchedDelete(f"s.{ACTION} = 'delete'")
                    .whenMatchedUpdate(f"s.{ACTION} = 'update'", set=update)
                    .whenNotMatchedInsert(f"s.{ACTION} = 'insert'", values=insert).execute())

        return merge_counts(self.ctx.writer.run(app_id, batch_id, run))

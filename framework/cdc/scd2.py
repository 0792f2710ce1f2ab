"""SCD type 2: the target holds every version of a row with ``__START_AT`` / ``__END_AT``.

Hidden state, both append-only:

* ``tombstones`` (keys, ``__seq``): every delete event applied;
* ``upserts`` (keys, ``__seq``, value columns): every upsert of a version that holds more than one (it absorbed
  in-place updates: untracked columns changed, or identical upserts), with the event's own values. A version
  opened by one upsert is its own record (its ``__START_AT`` and values), so it costs no state.

With the target's versions they are the full timeline of a key, so history is rebuilt exactly as if every event
had arrived in order, whatever the batching (``framework.cdc.versions``; tests/integration/cdc/test_properties.py).

Per batch, only keys that have events in the batch are touched:

1. events → one row per (key, sequence) (identical duplicates collapse, conflicting ones are refused);
2. timeline = the key's existing versions and stored upserts (one row per sequence, the stored values first) + its
   tombstones + the batch's new events (an event at a sequence the timeline already has is ignored: the first
   event applied at a sequence wins);
3. versions are rebuilt with window functions: an upsert opens a new version when it follows a delete or nothing,
   or when a tracked column differs from the previous upsert; otherwise it updates the version in place.
   ``__END_AT`` is the sequence of the event that follows the version's last upsert (a delete or the next version);
4. existing versions travel through the timeline flagged as old, so the rebuilt versions are diffed with them
   without reading the target again; only new, changed or vanished versions (plus the batch's new tombstones and
   upserts to keep) are materialized once; the upserts are appended to ``upserts`` first (a replay after a crash
   rebuilds the same versions from them), then the versions go into one Delta MERGE on (keys, ``__START_AT``)
   (with deletion vectors, so untouched rows are not rewritten);
5. the batch's new deletes are appended to ``tombstones``.

With ``ignore_null_updates`` / ``columns_to_update`` (upserts may leave columns unset), the target's versions hold
filled values, so every upsert goes to ``upserts`` as it came, with its set flags (``__set_<i>``): the timeline
then refills every upsert after a late event that sets a column (tests/integration/cdc/test_properties.py).
Known gaps: targets written before ``upserts`` existed have no record of what their versions absorbed, nor do
those whose ``upserts`` predates the set flags (their stored upserts count as setting every column).
"""

from __future__ import annotations

from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, Observation, SparkSession, Window
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
from framework.cdc.versions import (
    HISTORY,
    NEW,
    OLD,
    OLD_END,
    OLD_VALUES,
    STORED,
    VERSION_ACTIONS,
    changes,
    changes_single_pass,
)
from framework.storage.plain import row_bytes


class Scd2Applier:
    """Applies batches of prepared events to an SCD 2 target."""

    def __init__(self, ctx: TargetContext, plan: ColumnPlan, is_masked: bool,
                 new_target: StructType | None = None) -> None:
        self.ctx = ctx
        self.plan = plan
        self.is_masked = is_masked
        self.tombstones_path = ctx.state_table("tombstones")
        self.upserts_path = ctx.state_table("upserts")  # see framework.cdc.versions
        # The schema of a target that does not exist yet (a first load): nothing to read back, nothing to match,
        # and the batch's append creates it.
        self.new_target = new_target
        self.pinned = False  # this batch reads the target and tombstones from their files (framework.cdc.small)
        self.flagless_upserts = False  # ``upserts`` was written before it kept set flags: they are added to it
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
            raw = None
            if self.is_masked:
                raw = self._raw_upserts(timeline, target_schema)
                timeline = self._fill(timeline)
            changes = self._all_changes(timeline, target_schema, raw)
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

    def _all_changes(self, timeline: DataFrame, target_schema: StructType, raw: DataFrame | None) -> DataFrame:
        """The MERGE source (new, changed and vanished versions), the batch's new tombstones and, when upserts
        may leave columns unset, ``raw``: the batch's upserts as they came (see :meth:`_raw_upserts`)."""
        if self.plan.tracked == self.plan.values:
            found = changes_single_pass(timeline, self.plan)
        else:
            keys = list(self.plan.keys)
            end_type = target_schema[END_AT].dataType
            tombstones = timeline.filter(F.col(NEW) & (F.col(OP) == DELETE)).select(
                *keys, *[F.lit(None).cast(target_schema[c].dataType).alias(c) for c in self.plan.values],
                F.col(SEQ).alias(START_AT), F.lit(None).cast(end_type).alias(END_AT),
                F.lit("tombstone").alias(ACTION))
            found = changes(timeline, self.plan).unionByName(tombstones)
        if raw is None:
            return found
        flags = [F.lit(None).cast("boolean").alias(set_flag(i)) for i in range(len(self.plan.values))]
        return found.select("*", *flags).unionByName(raw)

    def _raw_upserts(self, timeline: DataFrame, target_schema: StructType) -> DataFrame:
        """Ignore-NULL / columns_to_update: the batch's new upserts with their own values and set flags, before
        the fill, as ``history`` rows. Every upsert is stored so (the timeline's new rows are flagged stored), so
        that a late event that sets a column refills the upserts above it exactly (the target holds filled
        values only)."""
        keys = list(self.plan.keys)
        return timeline.filter(F.col(NEW) & (F.col(OP) == UPSERT)).select(
            *keys, *self.plan.values, F.col(SEQ).alias(START_AT),
            F.lit(None).cast(target_schema[END_AT].dataType).alias(END_AT), F.lit(HISTORY).alias(ACTION),
            *[set_flag(i) for i in range(len(self.plan.values))])

    def _apply_spark(self, all_changes: DataFrame, batch_id: int, app_id: str,
                     num_deletes: int) -> dict[str, Any] | None:
        """Computed once (the target is scanned once per batch), then the upserts' append, a MERGE (an append
        into a new target) and the tombstones' append, each idempotent under its own app id.

        The upserts go first: a replay after a crash rebuilds the same versions from them and the target, while
        the target alone (already merged) no longer holds the values of the events a version absorbed."""
        observation = Observation()
        changes = materialize(all_changes.observe(observation, F.count_if(F.col(ACTION) == HISTORY).alias("h")))
        try:
            if observation.get["h"]:
                self.ctx.writer.append(self._stored(changes), self.upserts_path, f"{app_id}/upserts", batch_id,
                                       merge_schema=self.flagless_upserts)
            rows = changes.filter(F.col(ACTION).isin(*VERSION_ACTIONS))
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

    def _stored(self, changes: DataFrame) -> DataFrame:
        """The rows of the changes that go to the ``upserts`` state table, as stored there."""
        return changes.filter(F.col(ACTION) == HISTORY).select(*self.plan.keys, F.col(START_AT).alias(SEQ),
                                                               *self.plan.values, *self._stored_flags())

    def _stored_flags(self) -> list[Column]:
        """The set flags ``upserts`` keeps when upserts may leave columns unset (NULL: a row stored before
        its flags were, or one the target's filled values describe: every column set)."""
        if not self.is_masked:
            return []
        return [F.coalesce(F.col(set_flag(i)), F.lit(True)).alias(set_flag(i)) for i in range(len(self.plan.values))]

    def _apply_small(self, all_changes: DataFrame, batch_id: int, app_id: str, version: int,
                     num_deletes: int) -> dict[str, Any] | None:
        """The same writes committed by the driver (``framework.cdc.small``); a MERGE when it must not."""
        from framework.storage.driver import NeedsSpark

        data = all_changes.toArrow()
        self._append_state(data, all_changes.schema, batch_id, app_id, HISTORY)  # first: see _apply_spark
        try:
            assert self.target_rows is not None  # read by _timeline
            counts = commit_versions(self.ctx, self.target_rows, list(self.plan.keys), data, version,
                                     (app_id, batch_id))
        except NeedsSpark:
            changes = self.ctx.spark.createDataFrame(data, all_changes.schema)
            counts = self._merge(changes.filter(F.col(ACTION).isin(*VERSION_ACTIONS)), batch_id, app_id)
        if num_deletes:
            self._append_state(data, all_changes.schema, batch_id, app_id, "tombstone")
        return counts

    def _create_small(self, all_changes: DataFrame, batch_id: int, app_id: str,
                      num_deletes: int) -> dict[str, Any] | None:
        """A small first load committed by the driver (``framework.cdc.small.create_small``): the new target
        created with its rows, every one an insert, as :meth:`_append` does through Spark."""
        import pyarrow.compute as pc

        data = all_changes.toArrow()
        self._append_state(data, all_changes.schema, batch_id, app_id, HISTORY)  # first: see _apply_spark
        columns = [*self.plan.output, START_AT, END_AT]
        rows = data.filter(pc.equal(data.column(ACTION), "insert")).select(columns)
        schema = StructType([all_changes.schema[c] for c in columns])
        if not create_small(self.ctx, schema, rows, (app_id, batch_id)):
            return self._apply_spark(self.ctx.spark.createDataFrame(data, all_changes.schema), batch_id, app_id,
                                     num_deletes)
        if num_deletes:
            self._append_state(data, all_changes.schema, batch_id, app_id, "tombstone")
        return {"num_inserted_rows": rows.num_rows, "num_updated_rows": 0, "num_deleted_rows": 0}

    def _append_state(self, data: Any, schema: StructType, batch_id: int, app_id: str, action: str) -> None:
        """Append the rows of the Arrow ``data`` of the changes (of ``schema``) whose ``__action`` is ``action``
        (``tombstone``: to the tombstones; ``history``: to the upserts, values included) with the driver, or
        through Spark when it must not. Nothing when there are none."""
        import pyarrow.compute as pc
        from pyspark.sql.types import BooleanType, StructField

        keys = list(self.plan.keys)
        values = list(self.plan.values) if action == HISTORY else []
        flags = [set_flag(i) for i in range(len(values))] if self.is_masked else []
        rows = (data.filter(pc.equal(data.column(ACTION), action)).select([*keys, START_AT, *values, *flags])
                .rename_columns([*keys, SEQ, *values, *flags]))
        if action == HISTORY and not rows.num_rows:
            return
        for flag in flags:  # NULL: described by the target's (filled) values, every column set
            index = rows.schema.get_field_index(flag)
            rows = rows.set_column(index, flag, pc.fill_null(rows.column(flag), True))
        table = StructType([*(schema[k] for k in keys), StructField(SEQ, schema[START_AT].dataType),
                            *(schema[v] for v in values), *(StructField(f, BooleanType(), True) for f in flags)])
        path, name = ((self.upserts_path, "upserts") if action == HISTORY
                      else (self.tombstones_path, "tombstones"))
        txn = (f"{app_id}/{name}", batch_id)
        widen = action == HISTORY and self.flagless_upserts
        if widen or not append_small(self.ctx, path, table, rows, txn):
            self.ctx.writer.append(self.ctx.spark.createDataFrame(rows, table), path, txn[0], batch_id,
                                   merge_schema=widen)

    def _timeline(self, new: DataFrame) -> tuple[StructType, DataFrame]:
        """The target's schema, and the timeline of the batch's keys: their existing versions and tombstones
        (flagged old) followed by the batch's events at sequences the timeline does not have yet (flagged new)."""
        keys = list(self.plan.keys)

        def flagged_new(events: DataFrame, schema: StructType) -> DataFrame:
            return events.select(*new.columns, *self._flags(schema, old=False, new=True, stored=self.is_masked))

        tombstones, upserts = (read_pinned(self.ctx, path) if self.pinned else self.ctx.read_or_none(path)
                               for path in (self.tombstones_path, self.upserts_path))
        if self.new_target is not None and tombstones is None and upserts is None:
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
        old = self._old_events(existing, batch_keys, tombstones, upserts)
        fresh = flagged_new(new.join(old.select(*keys, SEQ), [*keys, SEQ], "left_anti"), existing.schema)
        return existing.schema, old.unionByName(fresh)

    def _flags(self, schema: StructType, old: bool, new: bool, stored: bool = False) -> list[Column]:
        """The timeline flags (``framework.cdc.versions``) of a row that is not a version of the target."""
        values = StructType([schema[c] for c in self.plan.values])
        return [F.lit(old).alias(OLD), F.lit(None).cast(schema[END_AT].dataType).alias(OLD_END),
                F.lit(new).alias(NEW), F.lit(None).cast(values).alias(OLD_VALUES), F.lit(stored).alias(STORED)]

    def _old_events(self, existing: DataFrame, batch_keys: DataFrame, tombstones: DataFrame | None,
                    upserts: DataFrame | None) -> DataFrame:
        """The timeline already applied for the batch's keys: versions and stored upserts as upserts, tombstones
        as deletes. A version that is also a stored upsert is one row, with the stored (the event's own) values."""
        keys = list(self.plan.keys)
        values = list(self.plan.values)
        sets = [F.lit(True).alias(set_flag(i)) for i in range(len(values))] if self.is_masked else []
        versions = existing.select(*keys, F.col(START_AT).alias(SEQ), F.lit(UPSERT).cast("tinyint").alias(OP),
                                   *values, *sets, F.lit(True).alias(OLD), F.col(END_AT).alias(OLD_END),
                                   F.lit(False).alias(NEW), F.struct(*values).alias(OLD_VALUES),
                                   F.lit(False).alias(STORED))
        if upserts is not None:
            self.flagless_upserts = self.is_masked and any(set_flag(i) not in upserts.columns for i in range(len(values)))
            stored = upserts.join(batch_keys, keys, "left_semi").select(
                *keys, SEQ, *[F.col(c).alias(f"__stored_{i}") for i, c in enumerate(values)],
                *[(F.col(set_flag(i)) if set_flag(i) in upserts.columns else F.lit(True)).alias(f"__stored_set_{i}")
                  for i in range(len(values)) if self.is_masked],
                F.lit(True).alias("__in_upserts"))
            both = versions.drop(STORED).join(stored, [*keys, SEQ], "full")
            in_upserts = F.coalesce(F.col("__in_upserts"), F.lit(False))
            versions = both.select(
                *keys, SEQ, F.lit(UPSERT).cast("tinyint").alias(OP),
                *[F.when(in_upserts, F.col(f"__stored_{i}")).otherwise(F.col(c)).alias(c)
                  for i, c in enumerate(values)],
                *[F.when(in_upserts, F.col(f"__stored_set_{i}")).otherwise(F.lit(True)).alias(set_flag(i))
                  for i in range(len(sets))], F.coalesce(F.col(OLD), F.lit(False)).alias(OLD), OLD_END, F.lit(False).alias(NEW),
                OLD_VALUES, in_upserts.alias(STORED))
        if tombstones is None:
            return versions
        deletes = tombstones.join(batch_keys, keys, "left_semi").select(
            *keys, SEQ, F.lit(DELETE).cast("tinyint").alias(OP),
            *[F.lit(None).cast(existing.schema[c].dataType).alias(c) for c in values], *sets,
            *self._flags(existing.schema, old=False, new=False))
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

"""SCD type 1: the target holds the latest row per key.

Hidden state (under the target's state folder):

* ``tombstones`` (keys, ``__seq``), append-only: the sequence of every delete that won its batch. A later event
  with a sequence not above a key's tombstone is ignored, so late events never resurrect deleted keys. Used when
  the sequence column is one of the target's columns ("inline" sequence: the live rows carry their sequence).
* ``ledger`` (keys, ``__seq``, ``__deleted``), one row per key ever seen: used instead of ``tombstones`` when the
  sequence is not a target column (excluded, or an expression/struct), to remember each live row's sequence.
* ``truncates`` (``__seq``): sequences of applied ``apply_as_truncates`` events; events at or below the highest
  one are ignored, rows below it were removed.

Per batch: events → one winner per key (highest sequence, one shuffle) → drop winners not newer than the state →
one Delta MERGE into the target → state writes. Targets are written before state so that a replay after a crash
recomputes the same change set; every write is idempotent under (app id, batch id).
"""

from __future__ import annotations

from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from framework.cdc.columns import ColumnPlan
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
    TRUNCATE,
    UPSERT,
    dedup_events,
    materialize_checked,
    reduce_to_winners,
    set_flag,
)
from framework.cdc.metrics import CdcMetrics

DELETED = "__deleted"
RESET = "__reset"


def has_flag(index: int) -> str:
    """Name of the column saying that the folded batch sets value column ``index``."""
    return f"__has_{index}"


class Scd1Applier:
    """Applies batches of prepared events to an SCD 1 target."""

    def __init__(self, ctx: TargetContext, plan: ColumnPlan, is_masked: bool, truncates: bool) -> None:
        self.ctx = ctx
        self.plan = plan
        self.is_masked = is_masked
        self.truncates = truncates
        self.tombstones_path = ctx.state_table("tombstones")
        self.ledger_path = ctx.state_table("ledger")
        self.truncates_path = ctx.state_table("truncates")

    # -- state -------------------------------------------------------------------------------------------------
    def _current(self) -> DataFrame | None:
        """Per key, the highest sequence the state knows for it (live row or delete), or None if no state."""
        keys = list(self.plan.keys)
        if self.plan.inline_sequence is None:
            ledger = self.ctx.read_or_none(self.ledger_path)
            return None if ledger is None else ledger.select(*keys, F.col(SEQ).alias("__cur"))
        parts = [self.ctx.read(self.ctx.target_path).select(*keys, F.col(self.plan.inline_sequence).alias("__cur"))]
        tombstones = self.ctx.read_or_none(self.tombstones_path)
        if tombstones is not None:
            parts.append(tombstones.select(*keys, F.col(SEQ).alias("__cur")))
        current = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
        return current.groupBy(*keys).agg(F.max("__cur").alias("__cur"))

    def _tombstone_floor(self) -> DataFrame | None:
        """Per key, the highest delete sequence (inline mode) or ledger sequence (ledger mode)."""
        keys = list(self.plan.keys)
        if self.plan.inline_sequence is None:
            ledger = self.ctx.read_or_none(self.ledger_path)
            return None if ledger is None else ledger.select(*keys, F.col(SEQ).alias("__cur"))
        tombstones = self.ctx.read_or_none(self.tombstones_path)
        if tombstones is None:
            return None
        return tombstones.groupBy(*keys).agg(F.max(SEQ).alias("__cur"))

    def _with_state(self, df: DataFrame, state: DataFrame | None) -> DataFrame:
        """``df`` with ``__cur``: the sequence the state holds for the key (NULL when none)."""
        if state is None:
            return df.withColumn("__cur", F.lit(None).cast(df.schema[SEQ].dataType))
        return df.join(state, list(self.plan.keys), "left")

    def _newer(self, df: DataFrame, state: DataFrame | None) -> DataFrame:
        joined = self._with_state(df, state)
        return joined.filter(F.col("__cur").isNull() | (F.col(SEQ) > F.col("__cur"))).drop("__cur")

    # -- truncates ---------------------------------------------------------------------------------------------
    def _apply_truncates(self, events: DataFrame, batch_id: int, app_id: str) -> DataFrame:
        """Apply the batch's truncate (if any) to the target and drop events at or below every truncate."""
        spark = events.sparkSession
        batch_truncate = events.filter(F.col(OP) == TRUNCATE).select(SEQ)
        stored = self.ctx.read_or_none(self.truncates_path)
        floor_parts = batch_truncate if stored is None else batch_truncate.unionByName(stored.select(SEQ))
        floor = F.broadcast(floor_parts.agg(F.max(SEQ).alias("__floor")))
        if batch_truncate.limit(1).count():
            self._truncate_target(spark, batch_truncate.agg(F.max(SEQ).alias("__floor")), batch_id, app_id)
            self.ctx.writer.append(batch_truncate.agg(F.max(SEQ).alias(SEQ)), self.truncates_path,
                                   f"{app_id}/truncates", batch_id)
        return (events.filter(F.col(OP) != TRUNCATE).crossJoin(floor)
                .filter(F.col("__floor").isNull() | (F.col(SEQ) > F.col("__floor"))).drop("__floor"))

    def _truncate_target(self, spark: SparkSession, floor: DataFrame, batch_id: int, app_id: str) -> None:
        keys = list(self.plan.keys)
        if self.plan.inline_sequence is not None:
            rows = self.ctx.read(self.ctx.target_path).select(*keys, F.col(self.plan.inline_sequence).alias(SEQ))
        else:
            ledger = self.ctx.read_or_none(self.ledger_path)
            if ledger is None:
                return
            rows = ledger.filter(~F.col(DELETED)).select(*keys, SEQ)
        doomed = rows.crossJoin(floor).filter(F.col(SEQ) < F.col("__floor")).select(*keys)

        def run(session: SparkSession) -> Any:
            return (DeltaTable.forPath(session, self.ctx.target_path).alias("t")
                    .merge(doomed.alias("s"), key_join(self.plan.keys)).whenMatchedDelete().execute())

        self.ctx.writer.run(f"{app_id}/truncate", batch_id, run)

    # -- winners -----------------------------------------------------------------------------------------------
    def _fold(self, events: DataFrame) -> DataFrame:
        """Masked mode: fold a key's newer events into one row, remembering which columns were set."""
        keys = list(self.plan.keys)
        fresh = self._newer(events, self._current())
        last_delete = F.max(F.when(F.col(OP) == DELETE, F.col(SEQ))).over(Window.partitionBy(*keys))
        fresh = fresh.withColumn("__last_del", last_delete)
        after_delete = F.col("__last_del").isNull() | (F.col(SEQ) > F.col("__last_del"))
        aggs: list[Column] = [F.max(SEQ).alias(SEQ), F.max_by(OP, SEQ).alias(OP),
                              F.first("__last_del").isNotNull().alias(RESET)]
        for i, name in enumerate(self.plan.values):
            order = F.when((F.col(OP) == UPSERT) & F.col(set_flag(i)) & after_delete, F.col(SEQ))
            aggs.append(F.max_by(F.struct(F.col(name).alias("v")), order).alias(f"__v{i}"))
        folded = fresh.groupBy(*keys).agg(*aggs)
        cols = [F.col(k) for k in keys] + [F.col(SEQ), F.col(OP), F.col(RESET)]
        for i, name in enumerate(self.plan.values):
            cols += [F.col(f"__v{i}.v").alias(name), F.col(f"__v{i}").isNotNull().alias(has_flag(i))]
        return folded.select(*cols)

    # -- apply -------------------------------------------------------------------------------------------------
    def apply(self, events: DataFrame, batch_id: int, app_id: str) -> CdcMetrics:
        """Apply one batch of prepared events (see ``events.prepare_events``)."""
        if self.truncates:
            events = self._apply_truncates(events, batch_id, app_id)
        if self.is_masked:
            winners = dedup_events(events, self.plan, True)
        else:
            # the state lookup is joined before materializing, so the MERGE source is a plain scan
            winners = self._with_state(reduce_to_winners(events, self.plan), self._tombstone_floor())
        reduced, num_input, num_deletes = materialize_checked(winners, events, self.plan, self.ctx.name)
        folded = None
        try:
            clean = reduced.drop(PROBLEM, COUNT)
            if self.is_masked:
                # the fold reads the target, which the MERGE changes: compute it once for MERGE and state
                changes = folded = materialize(self._fold(clean))
            else:
                changes = clean.filter(F.col("__cur").isNull() | (F.col(SEQ) > F.col("__cur"))).drop("__cur")
            counts = self._merge(changes, batch_id, app_id)
            self._write_state(changes, batch_id, app_id, num_deletes > 0)
        finally:
            release(reduced)
            if folded is not None:
                release(folded)
        metrics: CdcMetrics = merge_metrics(counts, num_input=num_input)
        return metrics

    def _merge(self, changes: DataFrame, batch_id: int, app_id: str) -> dict[str, Any] | None:
        plan = self.plan
        newer = f" AND s.{SEQ} > t.{quote(plan.inline_sequence)}" if plan.inline_sequence else ""
        update: dict[str, str | Column] = {}
        for i, name in enumerate(plan.values):
            source = f"s.{quote(name)}"
            if self.is_masked:
                source = f"CASE WHEN s.{RESET} OR s.{has_flag(i)} THEN {source} ELSE t.{quote(name)} END"
            update[quote(name)] = source
        insert: dict[str, str | Column] = {quote(c): f"s.{quote(c)}" for c in plan.output}

        def run(session: SparkSession) -> Any:
            builder = (DeltaTable.forPath(session, self.ctx.target_path).alias("t")
                       .merge(changes.alias("s"), key_join(plan.keys))
                       .whenMatchedDelete(f"s.{OP} = {DELETE}{newer}"))
            if update:
                builder = builder.whenMatchedUpdate(f"s.{OP} = {UPSERT}{newer}", set=update)
            return builder.whenNotMatchedInsert(f"s.{OP} = {UPSERT}", values=insert).execute()

        return merge_counts(self.ctx.writer.run(app_id, batch_id, run))

    def _write_state(self, changes: DataFrame, batch_id: int, app_id: str, has_deletes: bool) -> None:
        keys = list(self.plan.keys)
        if self.plan.inline_sequence is not None:
            if not has_deletes:
                return
            deletes = changes.filter(F.col(OP) == DELETE).select(*keys, SEQ)
            self.ctx.writer.append(deletes, self.tombstones_path, f"{app_id}/tombstones", batch_id)
            return
        entries = changes.select(*keys, SEQ, (F.col(OP) == DELETE).alias(DELETED))
        self.ctx.ensure_table(self.ledger_path, entries)

        def run(session: SparkSession) -> Any:
            return (DeltaTable.forPath(session, self.ledger_path).alias("t")
                    .merge(entries.alias("s"), key_join(self.plan.keys))
                    .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())

        self.ctx.writer.run(f"{app_id}/ledger", batch_id, run)

"""``SnapshotTarget``: ``apply_changes_from_snapshot`` / ``create_auto_cdc_from_snapshot_flow``.

Each snapshot is diffed with the target in one Delta MERGE: new keys are inserted, changed rows updated (SCD 1) or
closed and re-opened (SCD 2; only untracked columns changed → updated in place), keys missing from the snapshot
deleted (SCD 1) or closed with ``__END_AT`` = the snapshot version (SCD 2). Unchanged rows are not touched, and
with deletion vectors the files that hold them are not rewritten.

State (under the target's state folder): ``snapshot_state.json`` with the last processed version and the number of
snapshots applied; the latter is the Delta ``txnVersion`` of the next MERGE, so a crash between the MERGE and the
state write cannot apply a snapshot twice.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from framework.cdc.columns import END_AT, START_AT, ColumnPlan, plan_columns
from framework.cdc.context import (
    key_join,
    materialize,
    merge_counts,
    merge_metrics,
    quote,
    release,
)
from framework.cdc.metrics import CdcMetrics
from framework.cdc.storage import (
    create_table,
    delta_exists,
    last_txn_version,
    remove_tree,
    write_metadata,
)
from framework.cdc.target import CdcTargetBase, check_metadata, describe_spec
from framework.declarations import ApplyChangesFromSnapshot
from framework.errors import CdcError
from framework.storage import state_files

STATE_FILE = "snapshot_state.json"
APP_ID = "apply_changes_from_snapshot"


def encode_version(version: Any) -> dict[str, Any]:
    """A snapshot version as JSON (int, float, str, date or datetime)."""
    if isinstance(version, bool):
        raise TypeError("bool is not a snapshot version")
    if isinstance(version, dt.datetime):
        return {"type": "datetime", "value": version.isoformat()}
    if isinstance(version, dt.date):
        return {"type": "date", "value": version.isoformat()}
    if isinstance(version, int | float | str):
        return {"type": type(version).__name__, "value": version}
    raise TypeError(f"unsupported snapshot version type {type(version).__name__}")


def decode_version(data: dict[str, Any]) -> Any:
    """Inverse of ``encode_version``."""
    kind, value = data["type"], data["value"]
    if kind == "datetime":
        return dt.datetime.fromisoformat(value)
    if kind == "date":
        return dt.date.fromisoformat(value)
    return {"int": int, "float": float, "str": str}[kind](value)


def version_literal(version: Any) -> Column:
    """The version as a Spark literal typed for ``__START_AT``/``__END_AT`` (integers are ``bigint``)."""
    if isinstance(version, int):
        return F.lit(version).cast("bigint")
    return F.lit(version)


def _differs(left: Column, right: Column) -> Column:
    return ~left.eqNullSafe(right)


class SnapshotTarget(CdcTargetBase):
    """A target maintained from successive full snapshots, SCD type 1 or 2.

    Args:
        spark: the session used to read state (writes run in a private child session).
        spec: the normalized ``apply_changes_from_snapshot`` arguments.
        target_name: the target dataset name.
        target_path: where the user-visible Delta table lives.
        state_path: a folder owned by this target for its state.
        target_schema: declared schema (DDL or ``StructType``) or None.
    """

    def __init__(self, spark: SparkSession, spec: ApplyChangesFromSnapshot, target_name: str, target_path: str,
                 state_path: str, target_schema: Any = None) -> None:
        self.spec = spec
        super().__init__(spark, target_name, target_path, state_path, target_schema)

    @property
    def metadata(self) -> dict[str, Any]:
        """Keys and SCD type this target is built with."""
        return describe_spec(self.spec.keys, "<snapshot version>", self.spec.stored_as_scd_type)

    def check_compatible(self) -> None:
        """Raise ``SchemaChangeError`` when keys or SCD type differ from the existing target's."""
        check_metadata(self.name, self.state_path, self.metadata)

    def reset(self) -> None:
        """Full refresh: delete the target's data and state (the next snapshot starts from scratch)."""
        remove_tree(self.target_path)
        remove_tree(self.state_path)

    def _state(self) -> dict[str, Any]:
        file = f"{self.state_path.rstrip('/')}/{STATE_FILE}"
        loaded: dict[str, Any] = json.loads(state_files.read_text(file)) if state_files.exists(file) else {}
        return loaded

    def _save_state(self, version: Any, count: int) -> None:
        state = json.dumps({"version": encode_version(version), "count": count})
        state_files.write_text(f"{self.state_path.rstrip('/')}/{STATE_FILE}", state)

    def latest_version(self) -> Any:
        """The last processed snapshot version, or None before the first snapshot."""
        state = self._state()
        return decode_version(state["version"]) if "version" in state else None

    def run(self, resolve_source: Callable[[str], DataFrame], update_time: Any) -> list[CdcMetrics]:
        """Process every snapshot available in this update.

        Args:
            resolve_source: turns a dataset/table name into a DataFrame (used when ``spec.source`` is a name).
            update_time: the update's start time, the version of a snapshot taken from a name.

        Returns:
            One ``CdcMetrics`` per snapshot applied (possibly none).
        """
        source = self.spec.source
        if isinstance(source, str):
            return [self.apply_snapshot(resolve_source(source), update_time)]
        metrics: list[CdcMetrics] = []
        while True:
            result = source(self.latest_version())
            if result is None:
                return metrics
            snapshot_df, version = result
            metrics.append(self.apply_snapshot(snapshot_df, version))

    def apply_snapshot(self, snapshot_df: DataFrame, version: Any) -> CdcMetrics:
        """Make the target reflect ``snapshot_df`` as of ``version``.

        Raises:
            CdcError: ``version`` is not greater than the last processed one, or the snapshot has NULL or
                duplicate keys.
            SchemaChangeError: the target was built with other keys or SCD type.
        """
        self.check_compatible()
        latest = self.latest_version()
        try:
            increasing = latest is None or version > latest
        except TypeError:
            increasing = False
        if not increasing:
            raise CdcError(
                f"APPLY CHANGES FROM SNAPSHOT into '{self.name}': snapshot version {version!r} is not greater "
                f"than the last processed version {latest!r}. Versions must increase; return None from "
                "next_snapshot_and_version when there is no newer snapshot, or full-refresh the target."
            )
        plan = self._plan(snapshot_df)
        # materialized once: the MERGE reads its source twice and the snapshot query may not be deterministic
        snapshot = materialize(self._select(snapshot_df, plan))
        try:
            self._check_keys(snapshot, plan)
            self._ensure_target(plan, snapshot, version)
            count = int(self._state().get("count", 0))
            committed = last_txn_version(self.spark, self.target_path, APP_ID)
            if committed is not None and committed >= count:
                count = committed + 1  # a snapshot was merged but its state not saved: continue after it
            if self.spec.stored_as_scd_type == 1:
                metrics = self._apply_scd1(snapshot, plan, count)
            else:
                metrics = self._apply_scd2(snapshot, plan, version, count)
            self._save_state(version, count + 1)
        finally:
            release(snapshot)
        return metrics

    # -- helpers -----------------------------------------------------------------------------------------------
    def _plan(self, snapshot_df: DataFrame) -> ColumnPlan:
        schema_columns = None
        if self.schema is not None:
            schema_columns = [f.name for f in self.schema.fields]
        elif delta_exists(self.spark, self.target_path):
            schema_columns = [c for c in self._ctx.read(self.target_path).columns if c not in (START_AT, END_AT)]
        return plan_columns(self.spec, snapshot_df.columns, self.name, schema_columns)

    def _select(self, snapshot_df: DataFrame, plan: ColumnPlan) -> DataFrame:
        casts = {f.name: f.dataType for f in self.schema.fields} if self.schema is not None else {}
        return snapshot_df.select(*[F.col(c).cast(casts[c]).alias(c) if c in casts else F.col(c)
                                    for c in plan.output])

    def _check_keys(self, snapshot: DataFrame, plan: ColumnPlan) -> None:
        null_key: Column = F.lit(False)
        for key in plan.keys:
            null_key = null_key | F.col(key).isNull()
        bad = (snapshot.groupBy(*plan.keys).count().filter(null_key | (F.col("count") > 1))
               .limit(1).collect())
        if bad:
            row = bad[0].asDict()
            what = "a NULL key" if any(row[k] is None for k in plan.keys) else f"{row.pop('count')} rows for key"
            raise CdcError(
                f"APPLY CHANGES FROM SNAPSHOT into '{self.name}': the snapshot has {what} {row}. A snapshot "
                "must have exactly one row per key: fix the snapshot query or the keys."
            )

    def _ensure_target(self, plan: ColumnPlan, snapshot: DataFrame, version: Any) -> None:
        if delta_exists(self.spark, self.target_path):
            return
        fields = list(snapshot.schema.fields)
        if self.spec.stored_as_scd_type == 2:
            version_type = self.spark.range(1).select(version_literal(version)).schema.fields[0].dataType
            fields += [StructField(START_AT, version_type, True), StructField(END_AT, version_type, True)]
        create_table(self.spark, self.target_path, StructType(fields))
        write_metadata(self.state_path, self.metadata)

    def _apply_scd1(self, snapshot: DataFrame, plan: ColumnPlan, count: int) -> CdcMetrics:
        changed = " OR ".join(f"NOT (t.{quote(c)} <=> s.{quote(c)})" for c in plan.values) or "false"
        update: dict[str, str | Column] = {quote(c): f"s.{quote(c)}" for c in plan.values}
        insert: dict[str, str | Column] = {quote(c): f"s.{quote(c)}" for c in plan.output}

        def run(session: SparkSession) -> Any:
            builder = DeltaTable.forPath(session, self.target_path).alias("t").merge(
                snapshot.alias("s"), key_join(plan.keys))
            if update:
                builder = builder.whenMatchedUpdate(changed, set=update)
            return (builder.whenNotMatchedInsert(values=insert).whenNotMatchedBySourceDelete().execute())

        metrics: CdcMetrics = merge_metrics(merge_counts(self._ctx.writer.run(APP_ID, count, run)))
        return metrics

    def _apply_scd2(self, snapshot: DataFrame, plan: ColumnPlan, version: Any, count: int) -> CdcMetrics:
        keys = list(plan.keys)
        current = self._ctx.read(self.target_path).filter(F.col(END_AT).isNull()).select(
            *keys, *[F.col(c).alias(f"__o{i}") for i, c in enumerate(plan.values)], F.lit(True).alias("__old"))
        joined = snapshot.withColumn("__new", F.lit(True)).join(current, keys, "full_outer")
        tracked_change: Column = F.lit(False)
        any_change: Column = F.lit(False)
        for i, c in enumerate(plan.values):
            differs = _differs(F.col(c), F.col(f"__o{i}"))
            any_change = any_change | differs
            if c in plan.tracked:
                tracked_change = tracked_change | differs
        both = F.col("__new").isNotNull() & F.col("__old").isNotNull()
        closes = F.col("__new").isNull() | (both & tracked_change)
        opens = F.col("__old").isNull() | (both & tracked_change)
        in_place = both & ~tracked_change & any_change
        values = [F.col(c) for c in plan.values]
        existing_side = joined.filter(closes | in_place).select(
            *keys, *values, F.when(closes, F.lit("close")).otherwise(F.lit("update")).alias("__action"),
            F.col("__new").isNull().alias("__gone"))
        new_side = joined.filter(opens).select(*keys, *values, F.lit("insert").alias("__action"),
                                               F.lit(False).alias("__gone"))
        source = materialize(existing_side.unionByName(new_side))
        try:
            stats = source.agg(F.count_if(F.col("__action") != "close").alias("upserted"),
                               F.count_if(F.col("__gone")).alias("gone")).collect()[0]
            stamp = version_literal(version)
            condition = f"{key_join(plan.keys)} AND t.{END_AT} IS NULL AND s.__action <> 'insert'"
            insert: dict[str, Any] = {quote(c): F.col(f"s.{quote(c)}") for c in plan.output}
            insert[START_AT] = stamp
            insert[END_AT] = F.lit(None).cast(self._ctx.read(self.target_path).schema[END_AT].dataType)

            def run(session: SparkSession) -> Any:
                return (DeltaTable.forPath(session, self.target_path).alias("t")
                        .merge(source.alias("s"), condition)
                        .whenMatchedUpdate("s.__action = 'close'", set={END_AT: stamp})
                        .whenMatchedUpdate("s.__action = 'update'",
                                           set={quote(c): F.col(f"s.{quote(c)}") for c in plan.values})
                        .whenNotMatchedInsert("s.__action = 'insert'", values=insert).execute())

            self._ctx.writer.run(APP_ID, count, run)
        finally:
            release(source)
        return CdcMetrics(num_upserted_rows=int(stats["upserted"]), num_deleted_rows=int(stats["gone"]))

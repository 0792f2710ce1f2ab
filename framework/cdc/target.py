"""``ApplyChangesTarget``: the entry point the runner calls for ``apply_changes`` / ``create_auto_cdc_flow``."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructField, StructType

from framework.cdc.columns import END_AT, SCD2_COLUMNS, START_AT, ColumnPlan, column_text, plan_columns
from framework.cdc.context import TargetContext
from framework.cdc.events import SEQ, columns_to_update_source, masked, prepare_events
from framework.cdc.metrics import CdcMetrics
from framework.cdc.scd1 import Scd1Applier
from framework.cdc.scd2 import Scd2Applier
from framework.cdc.storage import (
    TxnWriter,
    create_table,
    delta_exists,
    read_metadata,
    remove_tree,
    write_metadata,
)
from framework.declarations import ApplyChanges
from framework.errors import SchemaChangeError


def parse_schema(spark: SparkSession, schema: Any) -> StructType | None:
    """A declared target schema (DDL string or ``StructType``) as a ``StructType`` (generated and identity
    columns with Delta's column metadata: ``framework/columns.py``)."""
    from framework.columns import declared_schema

    return declared_schema(spark, schema)


def describe_spec(keys: tuple[Any, ...], sequence_by: Any, scd_type: int) -> dict[str, Any]:
    """What identifies how a target was built: changing any of it needs a full refresh."""
    sequence = ([column_text(c) for c in sequence_by] if isinstance(sequence_by, list | tuple)
                else column_text(sequence_by))
    return {"keys": [column_text(k).lower() for k in keys], "sequence_by": sequence, "scd_type": scd_type}


def check_metadata(name: str, state_path: str, wanted: dict[str, Any]) -> None:
    """Raise ``SchemaChangeError`` when the target was built with other keys, sequence or SCD type."""
    stored = read_metadata(state_path)
    if stored is None:
        return
    labels = {"keys": "keys", "sequence_by": "sequence_by", "scd_type": "stored_as_scd_type"}
    changed = [f"{labels[k]} changed from {stored.get(k)!r} to {wanted[k]!r}" for k in labels
               if k in stored and stored[k] != wanted[k]]
    if changed:
        raise SchemaChangeError(
            f"CDC target '{name}' was built with different settings: {'; '.join(changed)}. Its rows and hidden "
            f"state cannot be reinterpreted: revert the change, or run a full refresh of '{name}'.",
            dataset=name,
        )


class CdcTargetBase:
    """What every CDC target holds: session, name, paths, declared schema and its write context."""

    def __init__(self, spark: SparkSession, target_name: str, target_path: str, state_path: str,
                 target_schema: Any, small_bytes: int = 0) -> None:
        self.spark = spark
        self.name = target_name
        self.target_path = target_path
        self.state_path = state_path
        self.schema = parse_schema(spark, target_schema)
        self._ctx = TargetContext(spark, target_name, target_path, state_path, TxnWriter(spark), small_bytes)


class ApplyChangesTarget(CdcTargetBase):
    """An APPLY CHANGES (AUTO CDC) target kept as a Delta table, SCD type 1 or 2.

    Args:
        spark: the session used to read state (writes run in a private child session).
        spec: the normalized ``apply_changes`` arguments.
        target_name: the target dataset name (used in messages).
        target_path: where the user-visible Delta table lives.
        state_path: a folder owned by this target for hidden state (tombstones, sequences, metadata).
        target_schema: the schema declared with ``create_streaming_table(schema=...)`` (DDL or ``StructType``),
            with or without ``__START_AT``/``__END_AT``; None to take the columns from the source.
        small_bytes: an SCD 2 target whose files add up to at most this many bytes has its batches committed by
            the driver (``framework.cdc.small``); 0 (the default): always a Delta MERGE.
    """

    def __init__(self, spark: SparkSession, spec: ApplyChanges, target_name: str, target_path: str,
                 state_path: str, target_schema: Any = None, small_bytes: int = 0) -> None:
        self.spec = spec  # checked where it was declared (framework.api), the rules relating its fields included
        super().__init__(spark, target_name, target_path, state_path, target_schema, small_bytes)
        # column plans by (source columns, target exists): only this object writes the target while it lives
        self._plans: dict[tuple[tuple[str, ...], bool], ColumnPlan] = {}

    @property
    def metadata(self) -> dict[str, Any]:
        """Keys, sequence and SCD type this target is built with (persisted beside the hidden state)."""
        return describe_spec(self.spec.keys, self.spec.sequence_by, self.spec.stored_as_scd_type)

    def check_compatible(self) -> None:
        """Refuse to continue when keys, ``sequence_by`` or the SCD type differ from the existing target's.

        Raises:
            SchemaChangeError: the target must be fully refreshed first.
        """
        check_metadata(self.name, self.state_path, self.metadata)

    def reset(self) -> None:
        """Full refresh: delete the target's data and all hidden state. Use a new ``app_id`` afterwards."""
        remove_tree(self.target_path)
        remove_tree(self.state_path)
        self._plans.clear()

    def apply_batch(self, batch_df: DataFrame, batch_id: int, app_id: str) -> CdcMetrics:
        """Apply one batch of change events (a ``foreachBatch`` micro-batch, or the whole batch of a once flow).

        Idempotent: replaying the same ``(app_id, batch_id)`` after a crash changes nothing that was committed.

        Args:
            batch_df: the change events (source columns).
            batch_id: the micro-batch id (monotonically increasing per ``app_id``).
            app_id: identifies this flow's stream; must change after a full refresh.

        Returns:
            The batch's metrics.

        Raises:
            CdcError: input breaks the contract (NULL key or sequence, conflicting duplicates, unknown columns).
            SchemaChangeError: the target was built with other keys, sequence or SCD type.
        """
        self.check_compatible()
        plan = self._plan(batch_df)
        events = prepare_events(batch_df, self.spec, plan, self._casts())
        new_target = self._ensure_target(plan, events)
        is_masked = masked(plan, self.spec)
        applier: Scd1Applier | Scd2Applier
        if self.spec.stored_as_scd_type == 1:
            applier = Scd1Applier(self._ctx, plan, is_masked, self.spec.apply_as_truncates is not None)
        else:
            applier = Scd2Applier(self._ctx, plan, is_masked, new_target=new_target)
        return applier.apply(events, batch_id, app_id)

    # -- helpers -----------------------------------------------------------------------------------------------
    def _plan(self, batch_df: DataFrame) -> ColumnPlan:
        key = (tuple(batch_df.columns), delta_exists(self.spark, self.target_path))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._new_plan(batch_df)
        return plan

    def _new_plan(self, batch_df: DataFrame) -> ColumnPlan:
        schema_columns = None
        if self.schema is not None:
            schema_columns = [f.name for f in self.schema.fields if f.name not in SCD2_COLUMNS]
        elif delta_exists(self.spark, self.target_path):
            schema_columns = [c for c in self._target_columns() if c not in SCD2_COLUMNS]
        ctu = columns_to_update_source(self.spec.columns_to_update)
        return plan_columns(self.spec, batch_df.columns, self.name, schema_columns, exclude=[ctu] if ctu else [])

    def _target_columns(self) -> list[str]:
        """The existing target's columns: from its log on the driver (no Spark), else through Delta."""
        from framework.storage.log import protocol_and_metadata

        found = protocol_and_metadata(self.target_path)
        if found is not None and found[2] is not None:
            return [f["name"] for f in json.loads(found[2]["schemaString"])["fields"]]
        return list(self._ctx.read(self.target_path).columns)

    def _casts(self) -> dict[str, Any]:
        if self.schema is None:
            return {}
        casts: dict[str, Any] = {f.name: f.dataType for f in self.schema.fields if f.name not in SCD2_COLUMNS}
        start = next((f for f in self.schema.fields if f.name == START_AT), None)
        if start is not None:
            casts[SEQ] = start.dataType
        return casts

    def _ensure_target(self, plan: ColumnPlan, events: DataFrame) -> StructType | None:
        """Make sure the target can take this batch. An SCD 1 target is created empty if it does not exist; a new
        SCD 2 target is not: its schema is returned, and the batch's append creates it (see ``TxnWriter.append``).
        Returns None when the target exists or was created here."""
        if delta_exists(self.spark, self.target_path):
            if read_metadata(self.state_path) is None:
                write_metadata(self.state_path, self.metadata)
            return None
        fields = list(events.select(*plan.output).schema.fields)
        write_metadata(self.state_path, self.metadata)
        if self.spec.stored_as_scd_type == 2:
            seq_type = events.schema[SEQ].dataType
            return StructType([*fields, StructField(START_AT, seq_type, True), StructField(END_AT, seq_type, True)])
        create_table(self.spark, self.target_path, StructType(fields))
        return None

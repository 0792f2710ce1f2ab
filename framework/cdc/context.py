"""What an SCD applier needs to know about its target: names, paths, sessions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from framework import internals
from framework.cdc.storage import TxnWriter, create_table, delta_exists


def quote(name: str) -> str:
    """A column name as a SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def key_join(keys: tuple[str, ...], left: str = "t", right: str = "s") -> str:
    """``t.k1 = s.k1 AND ...`` for a MERGE condition."""
    return " AND ".join(f"{left}.{quote(k)} = {right}.{quote(k)}" for k in keys)


@dataclass
class TargetContext:
    """Paths and sessions of one CDC target.

    Attributes:
        spark: the caller's session (reads).
        name: target dataset name (for messages).
        target_path: the user-visible Delta table.
        state_path: folder of hidden state tables and metadata.
        writer: runs idempotent writes in a private child session.
        small_bytes: targets whose live files add up to at most this are committed by the driver
            (``framework.cdc.small``); 0: always through Delta.
    """

    spark: SparkSession
    name: str
    target_path: str
    state_path: str
    writer: TxnWriter
    small_bytes: int = 0

    def state_table(self, table: str) -> str:
        """Path of a hidden state table."""
        return f"{self.state_path.rstrip('/')}/{table}"

    def read(self, path: str) -> DataFrame:
        """Read a Delta table (its latest version when the plan runs)."""
        return self.spark.read.format("delta").load(path)

    def read_or_none(self, path: str) -> DataFrame | None:
        """Read a Delta table, or None when it does not exist yet."""
        return self.read(path) if delta_exists(self.spark, path) else None

    def ensure_table(self, path: str, df: DataFrame) -> None:
        """Create an empty Delta table with ``df``'s schema if none exists at ``path``."""
        if not delta_exists(self.spark, path):
            create_table(self.spark, path, df.schema)


def merge_counts(result: DataFrame) -> dict[str, Any] | None:
    """The row counts a Delta MERGE returns, or None when Delta skipped it as already committed (txn replay)."""
    rows = result.collect()
    if not rows:
        return None
    return {k: int(v or 0) for k, v in rows[0].asDict().items()}


def merge_metrics(counts: dict[str, Any] | None, num_deleted: int | None = None, num_input: int = 0) -> Any:
    """``CdcMetrics`` from a MERGE's counts (``skipped`` when the MERGE was a replay)."""
    from framework.cdc.metrics import CdcMetrics

    if counts is None:
        return CdcMetrics(num_input_rows=num_input, skipped=True)
    return CdcMetrics(num_upserted_rows=counts.get("num_inserted_rows", 0) + counts.get("num_updated_rows", 0),
                      num_deleted_rows=counts.get("num_deleted_rows", 0) if num_deleted is None else num_deleted,
                      num_input_rows=num_input)


def materialize(df: DataFrame) -> DataFrame:
    """Compute ``df`` once into executor storage and cut its lineage (a local checkpoint).

    Unlike ``persist()``, a checkpointed source is not in the cache manager, which Delta's MERGE requires to stay
    unchanged while it runs; and re-reading it never re-runs the source query.
    """
    return df.localCheckpoint(eager=True)


def release(df: DataFrame) -> None:
    """Free the blocks of a DataFrame returned by ``materialize`` (best effort)."""
    try:
        plan = internals.analyzed_plan(df)
        if plan.getClass().getSimpleName() == "LogicalRDD":
            plan.rdd().unpersist(False)
    except Exception:  # freeing memory early is an optimisation only
        pass

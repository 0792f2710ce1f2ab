"""Materialized views recomputed over small inputs are written by the driver.

A materialized view's recompute is a full overwrite. Through Spark, that is a write job and Delta's commit with
the jobs that reconstruct the target's state: about a second on two cores for a view of a few rows, more than its
query. When everything the view's query reads is small (the sum of its inputs' estimated sizes is below
``small_updates.max_input_bytes`` of ``conf/spark.yaml``, 64 MiB), its result is collected as Arrow (one job: the
query itself) and committed by the driver (``framework.storage.driver.overwrite_arrow``). Views with a layout only
Delta's writer produces (partitions, clustering, a declared schema, ``delta.*`` properties), column types the
driver's Parquet writer does not store as Spark does, or a target table the driver must not write, go through
Spark as before.

The view's query reads the pipeline's small tables the same way: straight from the Parquet files live in their
Delta logs (``framework.storage.plain.pinned_parquet``), which spares Delta's state reconstruction for each new
version an input gained (0.3-0.5 s of jobs on two cores). A view's query is built at each recompute and run at
once, so the list is current; streaming flows never read this way (a stream-static join reads the static side
again per batch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def overwrite_small(df: DataFrame, path: str, max_bytes: int, *, description: str | None,
                    configuration: dict[str, Any], txn: tuple[str, int] | None = None) -> bool:
    """Recompute ``df`` into the Delta table at ``path`` through the driver when its inputs are small and the
    table allows it; False (nothing done) when Spark must write it."""
    from framework.storage.driver import NeedsSpark, checkpoint_if_due, overwrite_arrow
    from framework.storage.plain import input_bytes
    from framework.storage.policy import choose

    if not choose(path, df.schema, kind="overwrite", data_bytes=lambda: input_bytes(df), max_bytes=max_bytes).driver:
        return False
    data = df.toArrow()
    try:
        overwrite_arrow(path, df.schema, data, description=description,
                        configuration={str(k): str(v) for k, v in configuration.items()}, txn=txn)
    except NeedsSpark:
        return False  # the table changed meanwhile into one only Spark writes: its writer recomputes
    checkpoint_if_due(df.sparkSession, path)  # a view recomputed every second in continuous mode: a short log
    return True

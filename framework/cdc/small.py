"""Small SCD 2 targets: each batch committed by the driver instead of a Delta MERGE.

A MERGE into a target of a few thousand rows costs about as much as one into a large table: on two cores, 1.5-3 s
of small Spark jobs per batch (state reconstruction of the target and of the tombstones for each new version,
the MERGE's scan, write and deletion-vector jobs, its commit). When the target's live files add up to at most
``small_updates.max_input_bytes`` (``conf/spark.yaml``; the runner passes it as ``TargetContext.small_bytes``),
a batch instead:

1. reads the target and the tombstones from their live Parquet files (``framework.storage.plain``);
2. computes the same changes as the MERGE path (``Scd2Applier``), collected as Arrow in one job;
3. rebuilds the target's rows as the MERGE would leave them (rows of deleted or updated versions out, updated and
   inserted versions in: matched on the keys and ``__START_AT``, as the MERGE's condition) in one more job;
4. commits them with the driver (``framework.storage.driver.overwrite_arrow``: one new file, every old one removed)
   with the batch's ``txn`` action, so that a replayed batch writes nothing, exactly as the MERGE's
   ``txnAppId``/``txnVersion``; the new upserts to keep (before the target) and tombstones (after it) are
   appended the same way.

Only targets the driver may write qualify (see ``framework.storage.driver``: no partitions, column mapping,
constraints or live deletion vectors), and not those that record a change data feed: a consumer of the feed
must see a MERGE's updates, not every row deleted and inserted again. A target that grows past the limit goes
back to the MERGE; both paths read and write the same ``txn`` actions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from framework.cdc.columns import ACTION, START_AT

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

    from framework.cdc.context import TargetContext

def small_version(ctx: TargetContext) -> int | None:
    """The target's version when the driver may commit its next batch (see above); None: MERGE it."""
    from framework.storage.policy import choose

    choice = choose(ctx.target_path, None, kind="rewrite", data_bytes=0, max_bytes=ctx.small_bytes)
    return choice.version if choice.driver else None


def read_pinned(ctx: TargetContext, path: str) -> DataFrame | None:
    """A small table of the target (the target itself, the tombstones) read from its live files, or through
    Delta when it does not qualify; None when it does not exist."""
    from framework.cdc.storage import delta_exists
    from framework.storage.plain import pinned_parquet

    if not delta_exists(ctx.spark, path):
        return None
    pinned = pinned_parquet(ctx.spark, path, ctx.small_bytes)
    return pinned if pinned is not None else ctx.read(path)


def commit_versions(ctx: TargetContext, target: DataFrame, keys: list[str], changes: Any, version: int,
                    txn: tuple[str, int]) -> dict[str, int] | None:
    """Commit the rows of ``target`` (the target as the batch read it, at ``version``) after ``changes`` (Arrow:
    the versions with their ``__action``) with the driver.

    Returns the MERGE's counts, None when ``txn`` was committed already. Raises ``NeedsSpark`` when the driver
    must not commit (the target moved past ``version`` meanwhile, or changed into a table only Delta writes)."""
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    from framework.storage.driver import checkpoint_if_due, overwrite_arrow

    matched = [*keys, START_AT]
    source = ctx.spark.createDataFrame(changes)
    touched = source.filter(F.col(ACTION).isin("update", "delete")).select(*matched)
    existing = target.select(*matched)
    rows = (target.join(touched, matched, "left_anti")
            .unionByName(source.filter(F.col(ACTION) == "update").join(existing, matched, "left_semi")
                         .select(*target.columns))
            .unionByName(source.filter(F.col(ACTION) == "insert").join(existing, matched, "left_anti")
                         .select(*target.columns)))
    committed = overwrite_arrow(ctx.target_path, target.schema, rows.toArrow(), txn=txn, read_version=version)
    if committed is None:
        return None
    checkpoint_if_due(ctx.spark, ctx.target_path)
    actions = changes.column(ACTION)
    return {f"num_{name}_rows": int(pc.sum(pc.equal(actions, action)).as_py() or 0)
            for name, action in (("inserted", "insert"), ("updated", "update"), ("deleted", "delete"))}


def create_small(ctx: TargetContext, schema: StructType, rows: Any, txn: tuple[str, int]) -> bool:
    """Create a new target with the Arrow ``rows`` of its first batch (every one an insert) with the driver, as
    ``TxnWriter.append`` does through Spark: the same table properties and ``txn``. False when Spark must."""
    from framework.cdc.storage import TABLE_PROPERTIES, replace_pending
    from framework.storage.driver import NeedsSpark, append_arrow

    if replace_pending(ctx.target_path) or not _driver_appends(ctx, ctx.target_path, schema, rows):
        return False
    try:
        append_arrow(ctx.target_path, schema, rows, txn=txn, configuration=dict(TABLE_PROPERTIES))
    except NeedsSpark:
        return False
    return True


def append_small(ctx: TargetContext, path: str, schema: StructType, rows: Any, txn: tuple[str, int]) -> bool:
    """Append Arrow ``rows`` of ``schema`` to a state table with the driver (``txn`` skips a replay); False when
    Spark must append them."""
    from framework.cdc.storage import replace_pending
    from framework.storage.driver import NeedsSpark, append_arrow, checkpoint_if_due

    if replace_pending(path) or not _driver_appends(ctx, path, schema, rows):
        return False
    try:
        append_arrow(path, schema, rows, txn=txn)
    except NeedsSpark:
        return False
    checkpoint_if_due(ctx.spark, path)
    return True


def _driver_appends(ctx: TargetContext, path: str, schema: StructType, rows: Any) -> bool:
    """Whether the storage policy lets the driver append the Arrow ``rows`` to the table at ``path``."""
    from framework.storage.policy import choose

    return choose(path, schema, kind="append", data_bytes=int(rows.nbytes), max_bytes=ctx.small_bytes).driver

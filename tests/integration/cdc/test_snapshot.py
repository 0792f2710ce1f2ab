"""CDC from snapshots (SEMANTICS.md §4)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession

from framework.cdc import SnapshotTarget
from framework.declarations import ApplyChangesFromSnapshot
from framework.errors import CdcError
from tests.integration.cdc.helpers import ordered

pytestmark = pytest.mark.spark

T0 = dt.datetime(2024, 1, 1, 0, 0)
T12 = dt.datetime(2024, 1, 1, 12, 0)


def new_snapshot_target(spark: SparkSession, storage: Path, spec: ApplyChangesFromSnapshot,
                        name: str = "snap") -> SnapshotTarget:
    return SnapshotTarget(spark, spec, name, str(storage / "tables" / name), str(storage / "state" / name))


def read(spark: SparkSession, target: SnapshotTarget) -> list[tuple[Any, ...]]:
    return ordered([tuple(r) for r in spark.read.format("delta").load(target.target_path).collect()])


def test_semantics_example_scd2_from_function(spark: SparkSession, storage: Path) -> None:
    snapshots = {T0: [(1, "a1"), (2, "a2")], T12: [(2, "b2"), (3, "a3")]}
    calls: list[Any] = []

    def next_snapshot_and_version(latest: Any) -> tuple[DataFrame, Any] | None:
        calls.append(latest)
        later = sorted(v for v in snapshots if latest is None or v > latest)
        if not later:
            return None
        return spark.createDataFrame(snapshots[later[0]], "id INT, value STRING"), later[0]

    spec = ApplyChangesFromSnapshot(source=next_snapshot_and_version, keys=("id",), stored_as_scd_type=2)
    target = new_snapshot_target(spark, storage, spec)
    metrics = target.run(lambda name: spark.table(name), update_time=None)
    assert calls == [None, T0, T12]
    assert target.latest_version() == T12
    assert read(spark, target) == ordered([(1, "a1", T0, T12), (2, "a2", T0, T12), (2, "b2", T12, None),
                                           (3, "a3", T12, None)])
    assert [(m.num_upserted_rows, m.num_deleted_rows) for m in metrics] == [(2, 0), (2, 1)]
    with pytest.raises(CdcError, match="not greater"):
        target.apply_snapshot(spark.createDataFrame([(1, "x")], "id INT, value STRING"), T0)


def test_scd1_from_name_unchanged_rows_not_rewritten(spark: SparkSession, storage: Path) -> None:
    spec = ApplyChangesFromSnapshot(source="customers", keys=("id",), stored_as_scd_type=1)
    target = new_snapshot_target(spark, storage, spec)
    first = spark.createDataFrame([(i, f"v{i}") for i in range(20)], "id INT, value STRING").repartition(1)
    target.run(lambda name: first, update_time=T0)
    second = spark.createDataFrame([(i, "changed" if i == 5 else f"v{i}") for i in range(1, 21)],
                                   "id INT, value STRING")
    metrics = target.run(lambda name: second, update_time=T12)
    assert [(m.num_upserted_rows, m.num_deleted_rows) for m in metrics] == [(2, 1)]
    assert read(spark, target) == ordered([(i, "changed" if i == 5 else f"v{i}") for i in range(1, 21)])
    merge = DeltaTable.forPath(spark, target.target_path).history(1).collect()[0]
    assert merge.operation == "MERGE"
    assert int(merge.operationMetrics["numTargetRowsCopied"]) == 0  # deletion vectors: nothing copied
    assert int(merge.operationMetrics["numTargetRowsUpdated"]) == 1
    with pytest.raises(CdcError, match="exactly one row per key"):
        target.apply_snapshot(spark.createDataFrame([(1, "a"), (1, "b")], "id INT, value STRING"), T12 + dt.timedelta(1))

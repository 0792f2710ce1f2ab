"""Tombstones across updates, SCD 2 invariants, replays after a crash, contract errors, incompatible changes."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from framework.cdc import ApplyChangesTarget
from framework.cdc.scd1 import Scd1Applier
from framework.declarations import ApplyChanges
from framework.errors import CdcError, PipelineError, SchemaChangeError
from tests.integration.cdc.helpers import new_target, ordered, rows, table

pytestmark = pytest.mark.spark

SCHEMA = "id INT, v STRING, seq INT, op STRING"


def spec(scd: int = 1, keep_sequence: bool = True) -> ApplyChanges:
    return ApplyChanges(source="s", keys=("id",), sequence_by="seq", apply_as_deletes="op = 'D'",
                        except_column_list=("op",) if keep_sequence else ("op", "seq"), stored_as_scd_type=scd)


def update(spark: SparkSession, storage: Path, spc: ApplyChanges, data: list[tuple[Any, ...]],
           run: int) -> ApplyChangesTarget:
    """One pipeline update: a fresh target object and app id, like a new run of the runner."""
    target = new_target(spark, storage, spc)
    target.apply_batch(spark.createDataFrame(data, SCHEMA), 0, f"update-{run}")
    return target


def assert_scd2_invariants(df: DataFrame) -> None:
    data = df.collect()
    by_key: dict[Any, list[Any]] = {}
    for r in data:
        by_key.setdefault(r["id"], []).append(r)
    for key, versions in by_key.items():
        assert sum(v["__END_AT"] is None for v in versions) <= 1, f"several current rows for {key}"
        versions.sort(key=lambda v: v["__START_AT"])
        for a, b in itertools.pairwise(versions):
            assert a["__END_AT"] is not None and a["__END_AT"] <= b["__START_AT"], f"overlap for {key}: {a} {b}"
        assert all(v["__END_AT"] is None or v["__START_AT"] < v["__END_AT"] for v in versions)


@pytest.mark.parametrize("keep_sequence", [True, False], ids=["inline-sequence", "hidden-sequence"])
def test_scd1_tombstones_across_updates(spark: SparkSession, storage: Path, keep_sequence: bool) -> None:
    spc = spec(1, keep_sequence)
    update(spark, storage, spc, [(1, "a", 1, "U"), (2, "b", 1, "U"), (1, None, 10, "D")], 0)
    target = update(spark, storage, spc, [(1, "late", 5, "U"), (2, "old", 0, "U"), (3, None, 4, "D")], 1)
    expected = [(2, "b", 1)] if keep_sequence else [(2, "b")]
    assert rows(spark, target) == expected
    target = update(spark, storage, spc, [(1, "back", 11, "U"), (3, "gone", 3, "U")], 2)
    expected = [(1, "back", 11), (2, "b", 1)] if keep_sequence else [(1, "back"), (2, "b")]
    assert rows(spark, target) == expected


def test_scd2_tombstones_late_events_and_invariants(spark: SparkSession, storage: Path) -> None:
    spc = spec(2, keep_sequence=False)
    batches = [
        [(1, "a", 1, "U"), (1, None, 10, "D"), (3, None, 4, "D")],
        [(1, "late", 5, "U"), (3, "early", 3, "U"), (2, "x", 2, "U")],
        [(1, "back", 11, "U"), (2, "y", 1, "U"), (3, "new", 6, "U")],
    ]
    target = None
    for run, data in enumerate(batches):
        target = update(spark, storage, spc, data, run)
        assert_scd2_invariants(table(spark, target))
    assert target is not None
    assert rows(spark, target) == ordered([
        (1, "a", 1, 5), (1, "late", 5, 10), (1, "back", 11, None),
        (2, "y", 1, 2), (2, "x", 2, None),
        (3, "early", 3, 4), (3, "new", 6, None),
    ])


@pytest.mark.parametrize("scd", [1, 2])
def test_replay_after_crash_between_target_and_state(spark: SparkSession, storage: Path, scd: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The process dies after the target MERGE committed and before the state was written; the batch is replayed."""
    spc = spec(scd)
    first = [(1, "a", 1, "U"), (2, "b", 1, "U")]
    target = new_target(spark, storage, spc)
    target.apply_batch(spark.createDataFrame(first, SCHEMA), 0, "app")
    crashing = [(1, None, 5, "D"), (2, "c", 2, "U")]

    class Crash(Exception):
        pass

    def crash(*_: Any) -> None:
        raise Crash

    if scd == 1:
        monkeypatch.setattr(Scd1Applier, "_write_state", crash)
    else:
        monkeypatch.setattr(target._ctx.writer, "append", crash)
    with pytest.raises(Crash):
        target.apply_batch(spark.createDataFrame(crashing, SCHEMA), 1, "app")
    monkeypatch.undo()
    after_crash = rows(spark, target)
    version = spark.sql(f"DESCRIBE HISTORY delta.`{target.target_path}`").agg(F.max("version")).first()[0]
    replayed = target.apply_batch(spark.createDataFrame(crashing, SCHEMA), 1, "app")
    assert replayed.skipped
    assert rows(spark, target) == after_crash
    assert spark.sql(f"DESCRIBE HISTORY delta.`{target.target_path}`").agg(F.max("version")).first()[0] == version
    assert after_crash == ([(2, "c", 2)] if scd == 1 else [(1, "a", 1, 1, 5), (2, "b", 1, 1, 2), (2, "c", 2, 2, None)])
    # the tombstone was written by the replay: a late upsert below the delete does not revive the key
    target.apply_batch(spark.createDataFrame([(1, "late", 3, "U")], SCHEMA), 2, "app")
    final = after_crash if scd == 1 else ordered(
        [(1, "a", 1, 1, 3), (1, "late", 3, 3, 5), (2, "b", 1, 1, 2), (2, "c", 2, 2, None)])
    assert rows(spark, target) == final
    # replaying a fully committed batch changes nothing either
    again = target.apply_batch(spark.createDataFrame([(1, "late", 3, "U")], SCHEMA), 2, "app")
    assert again.skipped and rows(spark, target) == final


@pytest.mark.parametrize(("data", "message"), [
    ([(None, "a", 1, "U")], "NULL key"),
    ([(1, "a", None, "U")], "NULL sequence_by"),
    ([(1, "a", 1, "U"), (1, "b", 1, "U")], "same sequence value"),
], ids=["null-key", "null-sequence", "conflicting-duplicates"])
def test_contract_violations(spark: SparkSession, storage: Path, data: list[tuple[Any, ...]],
                             message: str) -> None:
    target = new_target(spark, storage, spec(1))
    with pytest.raises(CdcError) as error:
        target.apply_batch(spark.createDataFrame(data, SCHEMA), 0, "app")
    assert error.value.code == "APPLY_CHANGES_INVALID_INPUT"
    assert message in str(error.value) and "'target'" in str(error.value)
    assert isinstance(error.value, PipelineError)


def test_identical_duplicates_collapse_and_scd2_rejects_conflicts(spark: SparkSession, storage: Path) -> None:
    target = new_target(spark, storage, spec(2), "scd2")
    target.apply_batch(spark.createDataFrame([(1, "a", 1, "U"), (1, "a", 1, "U"), (1, "b", 2, "U")], SCHEMA),
                       0, "app")
    assert rows(spark, target) == [(1, "a", 1, 1, 2), (1, "b", 2, 2, None)]
    with pytest.raises(CdcError, match="same sequence value"):
        target.apply_batch(spark.createDataFrame([(1, "x", 0, "U"), (1, "y", 0, "U"), (1, "z", 9, "U")],
                                                 SCHEMA), 1, "app")


def test_incompatible_changes_need_full_refresh(spark: SparkSession, storage: Path) -> None:
    target = new_target(spark, storage, spec(1))
    target.apply_batch(spark.createDataFrame([(1, "a", 1, "U")], SCHEMA), 0, "app")
    changes = [
        ApplyChanges(source="s", keys=("v",), sequence_by="seq"),
        ApplyChanges(source="s", keys=("id",), sequence_by=F.struct("seq", "v")),
        spec(2),
    ]
    for changed in changes:
        other = new_target(spark, storage, changed)
        with pytest.raises(SchemaChangeError) as error:
            other.check_compatible()
        assert error.value.code == "INCOMPATIBLE_CHANGE_REQUIRES_FULL_REFRESH"
        assert "full refresh" in str(error.value) and "'target'" in str(error.value)
    # keys given as col() are the same keys
    new_target(spark, storage, ApplyChanges(source="s", keys=(F.col("ID"),), sequence_by=F.col("seq"))
               ).check_compatible()
    refreshed = new_target(spark, storage, spec(2))
    refreshed.reset()
    refreshed.check_compatible()
    refreshed.apply_batch(spark.createDataFrame([(1, "a", 1, "U")], SCHEMA), 0, "app-after-refresh")
    assert rows(spark, refreshed) == [(1, "a", 1, 1, None)]

"""Small SCD 2 targets are committed by the driver (framework/cdc/small.py): the same rows as a MERGE, the same
idempotency under (app id, batch id), and a MERGE wherever the driver must not write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from framework.cdc import ApplyChangesTarget, small
from framework.declarations import ApplyChanges
from framework.storage.driver import ENGINE_INFO
from framework.storage.log import latest_version, replay
from tests.integration.cdc.helpers import USERS, USERS_SCHEMA, rows, users_spec

pytestmark = [pytest.mark.spark]

SMALL = 1 << 20
SCHEMA = "id INT, v STRING, seq INT, op STRING"
SPEC = ApplyChanges(source="s", keys=("id",), sequence_by="seq", apply_as_deletes="op = 'D'",
                    except_column_list=("op",), stored_as_scd_type=2)


def _target(spark: SparkSession, root: Path, spec: ApplyChanges, small_bytes: int = SMALL) -> ApplyChangesTarget:
    return ApplyChangesTarget(spark, spec, "target", str(root / "t"), str(root / "s"), small_bytes=small_bytes)


def _last_commit(path: str) -> dict[str, Any]:
    version = latest_version(path)
    lines = (Path(path) / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    return next(json.loads(line)["commitInfo"] for line in lines if '"commitInfo"' in line)


def test_the_driver_commits_the_same_rows_as_a_merge(spark: SparkSession, tmp_path: Path) -> None:
    spec = users_spec(stored_as_scd_type=2)
    results = []
    for small_bytes, folder in ((0, "merge"), (SMALL, "driver")):
        target = _target(spark, tmp_path / folder, spec, small_bytes)
        for batch_id, batch in enumerate((USERS[:4], USERS[4:6], USERS[6:])):
            target.apply_batch(spark.createDataFrame(batch, USERS_SCHEMA), batch_id, "app")
        results.append(rows(spark, target))
        assert (_last_commit(target.target_path).get("engineInfo") == ENGINE_INFO) == (small_bytes > 0)
    assert results[0] == results[1]
    assert (123, "Isabel", "Chihuahua", 5, 6) in results[1]  # history kept: the documented example's SCD 2 rows


def test_a_replayed_batch_changes_nothing(spark: SparkSession, tmp_path: Path) -> None:
    target = _target(spark, tmp_path, SPEC)
    target.apply_batch(spark.createDataFrame([(1, "a", 1, "U"), (2, "b", 1, "U")], SCHEMA), 0, "app")
    batch = spark.createDataFrame([(1, "a2", 2, "U"), (2, None, 3, "D")], SCHEMA)
    first = target.apply_batch(batch, 1, "app")
    version = latest_version(target.target_path)
    replayed = target.apply_batch(batch, 1, "app")
    assert not first.skipped and replayed.skipped
    assert latest_version(target.target_path) == version
    state = replay(target.target_path)
    assert state is not None and state.transactions["app"] == 1
    assert rows(spark, target) == [(1, "a", 1, 1, 2), (1, "a2", 2, 2, None), (2, "b", 1, 1, 3)]


def test_a_crash_between_the_target_and_the_tombstones_is_repaired_by_the_replay(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = _target(spark, tmp_path, SPEC)
    target.apply_batch(spark.createDataFrame([(1, "a", 1, "U")], SCHEMA), 0, "app")
    batch = [(1, None, 5, "D")]

    def crash(*args: Any, **kwargs: Any) -> bool:
        raise KeyboardInterrupt("killed after the target's commit")

    monkeypatch.setattr("framework.cdc.scd2.append_small", crash)
    with pytest.raises(KeyboardInterrupt):
        target.apply_batch(spark.createDataFrame(batch, SCHEMA), 1, "app")
    monkeypatch.undo()
    assert rows(spark, target) == [(1, "a", 1, 1, 5)]  # the target's commit went through
    assert _target(spark, tmp_path, SPEC).apply_batch(spark.createDataFrame(batch, SCHEMA), 1, "app").skipped
    # the replay wrote the lost tombstone: a late upsert below the delete opens no open-ended version
    _target(spark, tmp_path, SPEC).apply_batch(spark.createDataFrame([(1, "late", 3, "U")], SCHEMA), 2, "app")
    assert rows(spark, target) == [(1, "a", 1, 1, 3), (1, "late", 3, 3, 5)]


def test_targets_the_driver_must_not_write_are_merged(spark: SparkSession, tmp_path: Path) -> None:
    first = [(1, "a", 1, "U"), (2, "b", 1, "U")]
    cdf = _target(spark, tmp_path / "cdf", SPEC)
    cdf.apply_batch(spark.createDataFrame(first, SCHEMA), 0, "app")
    spark.sql(f"ALTER TABLE delta.`{cdf.target_path}` SET TBLPROPERTIES (delta.enableChangeDataFeed = true)")
    cdf.apply_batch(spark.createDataFrame([(1, "a2", 2, "U")], SCHEMA), 1, "app")
    assert _last_commit(cdf.target_path)["operation"] == "MERGE"  # its feed shows an update, not a rewrite
    changes = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 2) \
        .load(cdf.target_path)
    assert sorted(r._change_type for r in changes.collect()) == ["insert", "update_postimage", "update_preimage"]

    merged = _target(spark, tmp_path / "dv", SPEC, small_bytes=0)
    many = [(i, f"v{i}", 1, "U") for i in range(1, 41)]  # files of many rows: a MERGE marks one deleted
    merged.apply_batch(spark.createDataFrame(many, SCHEMA).coalesce(1), 0, "app")
    merged.apply_batch(spark.createDataFrame([(1, "a2", 2, "U")], SCHEMA), 1, "app")
    state = replay(merged.target_path)
    assert state is not None and any(f.get("deletionVector") for f in state.files.values())  # the MERGE's
    again = _target(spark, tmp_path / "dv", SPEC)
    assert small.small_version(again._ctx) is None
    again.apply_batch(spark.createDataFrame([(2, "b2", 2, "U")], SCHEMA), 2, "app")
    assert _last_commit(again.target_path)["operation"] == "MERGE"
    assert [r for r in rows(spark, again) if r[0] <= 2] == [
        (1, "a2", 2, 2, None), (1, "v1", 1, 1, 2), (2, "b2", 2, 2, None), (2, "v2", 1, 1, 2)]

    over = _target(spark, tmp_path / "big", SPEC, small_bytes=10)  # over the size limit
    over.apply_batch(spark.createDataFrame(first, SCHEMA), 0, "app")
    over.apply_batch(spark.createDataFrame([(1, "a2", 2, "U")], SCHEMA), 1, "app")
    assert _last_commit(over.target_path)["operation"] == "MERGE"


def _first_commit(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (Path(path) / "_delta_log" / f"{0:020d}.json").read_text().splitlines()]


def test_a_small_first_load_is_created_by_the_driver_as_spark_creates_it(spark: SparkSession,
                                                                         tmp_path: Path) -> None:
    batch = [(1, "a", 1, "U"), (2, "b", 1, "U"), (2, None, 2, "D"), (3, "c", 4, "U")]
    commits, results = [], []
    for small_bytes, folder in ((0, "spark"), (SMALL, "driver")):
        target = _target(spark, tmp_path / folder, SPEC, small_bytes)
        metrics = target.apply_batch(spark.createDataFrame(batch, SCHEMA), 0, "app")
        assert (metrics.num_upserted_rows, metrics.num_deleted_rows) == (3, 1)
        assert target.apply_batch(spark.createDataFrame(batch, SCHEMA), 0, "app").skipped  # replayed: nothing
        commits.append(_first_commit(target.target_path))
        results.append(rows(spark, target))
        # the delete below the new version stays applied: a late upsert of key 2 opens no open-ended version
        target.apply_batch(spark.createDataFrame([(2, "late", 1, "U")], SCHEMA), 1, "app")
        results.append(rows(spark, target))
    assert results[0] == results[2] and results[1] == results[3]
    spark_commit, driver_commit = commits
    assert driver_commit[0]["commitInfo"]["engineInfo"] == ENGINE_INFO
    assert [a["protocol"] for a in driver_commit if "protocol" in a] == [a["protocol"] for a in spark_commit
                                                                        if "protocol" in a]
    configuration = [a["metaData"]["configuration"] for a in driver_commit if "metaData" in a]
    assert configuration == [{"delta.enableDeletionVectors": "true"}]
    assert [a["txn"]["appId"] for a in driver_commit if "txn" in a] == ["app"]

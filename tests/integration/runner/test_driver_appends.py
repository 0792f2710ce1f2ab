"""Delta tables appended to by the driver (framework.storage.driver) are ordinary Delta tables for Spark: read,
appended to by Spark in between, checkpointed by Delta and appended to again from the checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType, _parse_datatype_string

from framework.events import EVENT_LOG_DDL, EventLog, event_log_schema
from framework.storage.driver import append_rows, checkpoint_if_due
from framework.storage.log import checkpoint_version, protocol_and_metadata


def test_the_python_parse_of_the_event_log_schema_is_sparks(spark: SparkSession) -> None:
    parsed = _parse_datatype_string(EVENT_LOG_DDL)
    assert isinstance(parsed, StructType) and parsed == event_log_schema()


def test_events_written_by_the_driver_read_back_in_spark(spark: SparkSession, tmp_path: Path) -> None:
    log = EventLog(str(tmp_path / "events"), "pid", "pipe", "upd")
    log.emit("flow_progress", "done", details={"flow_progress": {"status": "COMPLETED"}}, flow_name="f",
             batch_id=3, error=ValueError("bad value"))
    log.emit("update_progress", "ok", level="WARN")
    expected = log.events
    assert log.flush(spark) == 2
    rows = spark.read.format("delta").load(log.path).orderBy("sequence.control_plane_seq_no").collect()
    assert [r.id for r in rows] == [e["id"] for e in expected]
    assert [r.timestamp for r in rows] == [e["timestamp"] for e in expected]  # UTC session: naive UTC back
    first = rows[0]
    assert (first.origin.flow_name, first.origin.batch_id, first.level) == ("f", 3, "INFO")
    assert first.error.exceptions[0].class_name.endswith("ValueError")
    assert first.error.exceptions[0].message == "bad value"
    history = spark.sql(f"DESCRIBE HISTORY delta.`{log.path}`").collect()
    assert [h.operation for h in history] == ["WRITE"]


def test_spark_and_driver_commits_interleave_and_checkpoints_are_deltas(spark: SparkSession,
                                                                         tmp_path: Path) -> None:
    path = tmp_path / "t"
    schema = StructType.fromJson({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
    spark.range(0, 2).write.format("delta").save(str(path))  # created by Spark: its protocol and metadata
    for i in range(1, 25):
        append_rows(path, schema, [{"id": 10 * i}, {"id": 10 * i + 1}])
        if i == 5:
            spark.range(500, 503).write.format("delta").mode("append").save(str(path))
    versions, checkpoint = checkpoint_version(path)
    assert (versions[-1], checkpoint) == (25, -1)  # Spark checkpoints only at a multiple of 10 it commits
    assert checkpoint_if_due(spark, path, every=20)
    versions, checkpoint = checkpoint_version(path)
    assert checkpoint == 25
    assert not checkpoint_if_due(spark, path, every=20)
    for old in versions:  # only the checkpoint tells the protocol and metadata now
        (path / "_delta_log" / f"{old:020d}.json").rename(path / f"moved-{old}.json")
    found = protocol_and_metadata(path)
    assert found is not None and found[0] == 25 and found[1] is not None and found[2] is not None
    assert append_rows(path, schema, [{"id": -1}]) == 26
    ids = sorted(r.id for r in spark.read.format("delta").load(str(path)).collect())
    assert ids == sorted([0, 1, 500, 501, 502, -1, *[10 * i for i in range(1, 25)],
                          *[10 * i + 1 for i in range(1, 25)]])


def test_views_recomputed_by_the_driver_are_checkpointed(spark: SparkSession, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from framework.storage.log import live_files
    from framework.storage.overwrites import overwrite_small

    monkeypatch.setattr("framework.storage.driver.CHECKPOINT_EVERY", 20)
    path = str(tmp_path / "v")
    for i in range(22):
        assert overwrite_small(spark.range(i, i + 3).toDF("id"), path, 1 << 20, description=None, configuration={})
    assert checkpoint_version(path)[1] == 20  # one every CHECKPOINT_EVERY driver commits
    files = live_files(path)
    assert files is not None and len(files) == 1
    assert sorted(r.id for r in spark.read.format("delta").load(path).collect()) == [21, 22, 23]
    assert not overwrite_small(spark.range(0, 100_000).toDF("id"), path, 1024, description=None, configuration={})

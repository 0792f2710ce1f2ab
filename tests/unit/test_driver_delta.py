"""framework.storage.driver: the driver's own Delta appends (no Spark): commits, refusals, concurrent versions."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from framework.events import EVENT_LOG_DDL, event_log_schema
from framework.storage.driver import NeedsSpark, append_arrow, append_rows, overwrite_arrow
from framework.storage.log import protocol_and_metadata, replay

SCHEMA = StructType([StructField("id", LongType()), StructField("name", StringType()),
                     StructField("at", TimestampType())])


def _commit(table: Path, version: int) -> list[dict]:
    return [json.loads(line) for line in (table / "_delta_log" / f"{version:020d}.json").read_text().splitlines()]


def test_first_append_creates_the_table_and_later_ones_add_a_file_each(tmp_path: Path) -> None:
    table = tmp_path / "t"
    assert append_rows(table, SCHEMA, [{"id": 1, "name": "a", "at": datetime(2026, 1, 2, 3, 4, 5)}]) == 0
    assert append_rows(table, SCHEMA, [{"id": 2, "name": None, "at": None}, {"id": 3}]) == 1
    first, second = _commit(table, 0), _commit(table, 1)
    assert [next(iter(a)) for a in first] == ["commitInfo", "protocol", "metaData", "add"]
    assert [next(iter(a)) for a in second] == ["commitInfo", "add"]
    assert StructType.fromJson(json.loads(first[2]["metaData"]["schemaString"])) == SCHEMA
    assert second[0]["commitInfo"]["readVersion"] == 0
    add = second[1]["add"]
    assert json.loads(add["stats"]) == {"numRecords": 2, "minValues": {"id": 2}, "maxValues": {"id": 3},
                                        "nullCount": {"id": 0, "name": 2, "at": 2}}
    assert add["size"] == (table / add["path"]).stat().st_size
    rows = pq.read_table(table / first[3]["add"]["path"]).to_pylist()
    assert rows[0]["id"] == 1 and rows[0]["at"].isoformat() == "2026-01-02T03:04:05+00:00"  # naive = UTC


def test_a_version_taken_meanwhile_is_skipped_not_overwritten(tmp_path: Path) -> None:
    table = tmp_path / "t"
    append_rows(table, SCHEMA, [{"id": 1}])
    original = (table / "_delta_log" / f"{0:020d}.json").read_text()
    (table / "_delta_log" / f"{1:020d}.json").write_text(json.dumps({"commitInfo": {}}) + "\n")  # another writer
    assert append_rows(table, SCHEMA, [{"id": 2}]) == 2
    assert (table / "_delta_log" / f"{0:020d}.json").read_text() == original
    assert not [p for p in (table / "_delta_log").iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(("protocol", "metadata", "reason"), [
    ({"minReaderVersion": 3, "minWriterVersion": 7, "writerFeatures": ["deletionVectors", "rowTracking"]}, {},
     "protocol"),
    ({"minReaderVersion": 1, "minWriterVersion": 4}, {}, "protocol"),
    ({"minReaderVersion": 1, "minWriterVersion": 2}, {"partitionColumns": ["id"]}, "partitioned"),
    ({"minReaderVersion": 1, "minWriterVersion": 2},
     {"configuration": {"delta.columnMapping.mode": "name"}}, "maps column names"),
    ({"minReaderVersion": 1, "minWriterVersion": 2},
     {"schemaString": StructType([StructField("id", LongType())]).json()}, "schema"),
])
def test_tables_it_must_not_write_are_refused_before_anything_is_written(
        tmp_path: Path, protocol: dict, metadata: dict, reason: str) -> None:
    table = tmp_path / "t"
    log = table / "_delta_log"
    log.mkdir(parents=True)
    meta = {"id": "x", "format": {"provider": "parquet", "options": {}}, "schemaString": SCHEMA.json(),
            "partitionColumns": [], "configuration": {}, **metadata}
    (log / f"{0:020d}.json").write_text(json.dumps({"protocol": protocol}) + "\n" + json.dumps({"metaData": meta}))
    with pytest.raises(NeedsSpark, match=reason):
        append_rows(table, SCHEMA, [{"id": 1}])
    assert sorted(p.name for p in table.iterdir()) == ["_delta_log"]
    assert [p.name for p in log.iterdir()] == [f"{0:020d}.json"]


def test_a_gap_in_the_log_is_not_read_on_the_driver(tmp_path: Path) -> None:
    table = tmp_path / "t"
    append_rows(table, SCHEMA, [{"id": 1}])
    (table / "_delta_log" / f"{2:020d}.json").write_text(json.dumps({"commitInfo": {}}) + "\n")
    assert protocol_and_metadata(table) is None
    with pytest.raises(NeedsSpark, match="cannot be read"):
        append_rows(table, SCHEMA, [{"id": 2}])


def test_the_event_log_schema_is_parsed_without_a_jvm() -> None:
    schema = event_log_schema()
    assert [f.name for f in schema.fields] == [
        "id", "sequence", "origin", "timestamp", "message", "level", "maturity_level", "error", "details",
        "event_type"]
    assert schema["error"].dataType.simpleString() == (
        "struct<fatal:boolean,exceptions:array<struct<class_name:string,message:string,error_class:string>>>")
    assert "control_plane_seq_no" in EVENT_LOG_DDL and schema["sequence"].dataType.simpleString() == (
        "struct<data_plane_id:struct<instance:string,seq_no:bigint>,control_plane_seq_no:bigint>")


def _rows(table: Path) -> list[int]:
    state = replay(table)
    assert state is not None
    return sorted(r["id"] for f in state.files for r in pq.read_table(table / f).to_pylist())


def test_a_batch_committed_under_a_txn_is_written_once(tmp_path: Path) -> None:
    import pyarrow as pa

    table = tmp_path / "t"
    data = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"],
                     "at": pa.array([None, None], pa.timestamp("us", tz="UTC"))})
    assert append_arrow(table, SCHEMA, data, txn=("app", 0)) == 0
    assert append_arrow(table, SCHEMA, data, txn=("app", 0)) is None  # a replay: nothing written
    assert append_arrow(table, SCHEMA, data, txn=("other", 0)) == 1
    assert replay(table).transactions == {"app": 0, "other": 0}  # type: ignore[union-attr]
    assert overwrite_arrow(table, SCHEMA, data.slice(0, 1), txn=("app", 1), read_version=1) == 2
    assert overwrite_arrow(table, SCHEMA, data, txn=("app", 1)) is None
    assert _rows(table) == [1]
    with pytest.raises(NeedsSpark, match="moved from version 1 to 2"):
        overwrite_arrow(table, SCHEMA, data, txn=("app", 2), read_version=1)
    assert _rows(table) == [1] and len(list(table.glob("*.parquet"))) == 3  # the refused file is gone


def test_deletion_vectors_are_written_around_while_no_live_file_has_one(tmp_path: Path) -> None:
    table = tmp_path / "t"
    log = table / "_delta_log"
    log.mkdir(parents=True)
    meta = {"id": "x", "format": {"provider": "parquet", "options": {}}, "schemaString": SCHEMA.json(),
            "partitionColumns": [], "configuration": {"delta.enableDeletionVectors": "true"}}
    protocol = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                "writerFeatures": ["deletionVectors", "invariants", "appendOnly"]}
    (log / f"{0:020d}.json").write_text(json.dumps({"protocol": protocol}) + "\n" + json.dumps({"metaData": meta}))
    assert append_rows(table, SCHEMA, [{"id": 1}]) == 1
    add = {"path": "x.parquet", "partitionValues": {}, "size": 1, "modificationTime": 0, "dataChange": True,
           "deletionVector": {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f", "offset": 1,
                              "sizeInBytes": 34, "cardinality": 1}}
    (log / f"{2:020d}.json").write_text(json.dumps({"add": add}) + "\n")
    import pyarrow as pa

    with pytest.raises(NeedsSpark, match="live files"):
        overwrite_arrow(table, SCHEMA, pa.table({"id": pa.array([5], pa.int64())}))


def test_a_large_batch_is_written_as_one_file_per_core_in_one_commit(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow as pa

    import framework.storage.driver as driver_delta

    monkeypatch.setattr(driver_delta, "PART_MIN_ROWS", 2)
    monkeypatch.setattr(driver_delta.os, "sched_getaffinity", lambda pid: {0, 1})
    table = tmp_path / "t"
    data = pa.table({"id": pa.array(range(5), pa.int64()), "name": list("abcde"),
                     "at": pa.array([None] * 5, pa.timestamp("us", tz="UTC"))})
    assert append_arrow(table, SCHEMA, data) == 0
    adds = [a["add"] for a in _commit(table, 0) if "add" in a]
    assert len(adds) == 2 and sorted(json.loads(a["stats"])["numRecords"] for a in adds) == [2, 3]
    assert [r for a in adds for r in pq.read_table(table / a["path"]).column("id").to_pylist()] == [0, 1, 2, 3, 4]
    assert append_arrow(table, SCHEMA, data.slice(0, 3)) == 1  # under two slices: one file
    assert len([a for a in _commit(table, 1) if "add" in a]) == 1
    assert overwrite_arrow(table, SCHEMA, data) == 2
    assert _rows(table) == [0, 1, 2, 3, 4] and len(replay(table).files) == 2  # type: ignore[union-attr]


def test_a_part_that_fails_leaves_no_file_of_the_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow as pa

    import framework.storage.driver as driver_delta

    monkeypatch.setattr(driver_delta, "PART_MIN_ROWS", 2)
    monkeypatch.setattr(driver_delta.os, "sched_getaffinity", lambda pid: {0, 1})
    write = driver_delta._write_parquet

    def second_part_fails(table: Path, data: pa.Table) -> dict:
        if data.column("id")[0].as_py() > 0:
            raise OSError("disk full")
        return write(table, data)

    monkeypatch.setattr(driver_delta, "_write_parquet", second_part_fails)
    table = tmp_path / "t"
    data = pa.table({"id": pa.array(range(5), pa.int64()), "name": list("abcde"),
                     "at": pa.array([None] * 5, pa.timestamp("us", tz="UTC"))})
    with pytest.raises(OSError, match="disk full"):
        append_arrow(table, SCHEMA, data)
    assert not list(table.glob("*.parquet")) and not list((table / "_delta_log").glob("*.json"))

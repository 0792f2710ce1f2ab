"""framework.storage.log: driver-side answers from a Delta table's JSON commits (no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

from framework.storage.log import appended_since_creation, latest_metadata, protocol_and_metadata

SCHEMA = '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}'


def _commit(table: Path, version: int, *actions: dict) -> None:
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions))


def _metadata(schema: str = SCHEMA, **extra: object) -> dict:
    return {"metaData": {"id": "x", "schemaString": schema, "partitionColumns": [], "configuration": {}, **extra}}


def _add(path: str, data_change: bool = True) -> dict:
    return {"add": {"path": path, "size": 1, "dataChange": data_change}}


def test_appends_and_compaction_replay_from_version_zero(tmp_path: Path) -> None:
    _commit(tmp_path, 0, {"protocol": {"minReaderVersion": 1}}, _metadata())
    _commit(tmp_path, 1, {"commitInfo": {}}, _add("a"), {"txn": {"appId": "q", "version": 0}})
    _commit(tmp_path, 2, _metadata(configuration={"quality": "bronze"}))  # properties only: same layout
    _commit(tmp_path, 3, _add("b"))
    _commit(tmp_path, 4, {"remove": {"path": "a", "dataChange": False}}, _add("ab", data_change=False))
    assert appended_since_creation(tmp_path)


def test_a_delete_update_or_overwrite_needs_the_snapshot(tmp_path: Path) -> None:
    _commit(tmp_path, 0, _metadata(), _add("a"))
    _commit(tmp_path, 1, {"remove": {"path": "a", "dataChange": True}})
    assert not appended_since_creation(tmp_path)


def test_a_schema_change_needs_the_snapshot(tmp_path: Path) -> None:
    _commit(tmp_path, 0, _metadata(), _add("a"))
    _commit(tmp_path, 1, _metadata(SCHEMA.replace('"id"', '"key"')), _add("b"))
    assert not appended_since_creation(tmp_path)


def test_an_incomplete_or_long_log_needs_the_snapshot(tmp_path: Path) -> None:
    assert not appended_since_creation(tmp_path / "missing")
    _commit(tmp_path, 1, _add("b"))  # version 0 cleaned up
    assert not appended_since_creation(tmp_path)
    _commit(tmp_path, 0, _metadata(), _add("a"))
    assert appended_since_creation(tmp_path)
    assert not appended_since_creation(tmp_path, max_commits=1)
    (tmp_path / "_delta_log" / f"{2:020d}.checkpoint.parquet").write_bytes(b"")  # newer than any commit
    assert not appended_since_creation(tmp_path)


def test_a_damaged_commit_answers_no(tmp_path: Path) -> None:
    _commit(tmp_path, 0, _metadata())
    (tmp_path / "_delta_log" / f"{1:020d}.json").write_text("{not json")
    assert not appended_since_creation(tmp_path)
    assert latest_metadata(tmp_path) is None


def test_latest_metadata_is_the_newest_metadata_action(tmp_path: Path) -> None:
    _commit(tmp_path, 0, _metadata(), _add("a"))
    _commit(tmp_path, 1, _metadata(configuration={"quality": "gold"}, description="dims"))
    _commit(tmp_path, 2, _add("b"))
    found = latest_metadata(tmp_path)
    assert found is not None and found["configuration"] == {"quality": "gold"} and found["description"] == "dims"


def test_latest_metadata_behind_a_checkpoint_is_unknown(tmp_path: Path) -> None:
    _commit(tmp_path, 0, _metadata(), _add("a"))
    _commit(tmp_path, 1, _add("b"))
    (tmp_path / "_delta_log" / f"{1:020d}.checkpoint.parquet").write_bytes(b"")
    _commit(tmp_path, 2, _add("c"))
    assert latest_metadata(tmp_path) is None  # in the checkpoint's parquet, not in a JSON commit
    assert latest_metadata(tmp_path / "missing") is None


def test_protocol_and_metadata_are_the_newest_of_each(tmp_path: Path) -> None:
    protocol = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
    _commit(tmp_path, 0, protocol, _metadata(), _add("a"))
    _commit(tmp_path, 1, _metadata(configuration={"quality": "gold"}))  # ALTER TABLE: metadata without protocol
    _commit(tmp_path, 2, _add("b"))
    found = protocol_and_metadata(tmp_path)
    assert found is not None and found[0] == 2 and found[1] == protocol["protocol"]
    assert found[2] is not None and found[2]["configuration"] == {"quality": "gold"}  # not version 0's

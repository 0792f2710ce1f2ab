"""The refresh record of an incremental materialized view (issue 37, framework/incremental/state.py): the one in
force is the one whose txn the view's log holds, and none once another commit changed the view's data."""

from __future__ import annotations

import json
from pathlib import Path

from framework.incremental.state import (
    APP_ID,
    RefreshState,
    SeenInput,
    committed_state,
    last_refresh,
    write_state,
)


def _commit(table: Path, version: int, *actions: dict) -> None:
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    lines = [{"commitInfo": {"operation": "WRITE"}}, *actions]
    (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in lines))


def _add(name: str) -> dict:
    return {"add": {"path": name, "size": 1, "partitionValues": {}, "dataChange": True, "modificationTime": 0}}


def _state(n: int, version: int) -> RefreshState:
    return RefreshState(n, "fp", "APPEND_ONLY", {"/in": SeenInput(version, "id")})


def test_the_committed_record_wins_over_a_killed_refresh(tmp_path: Path) -> None:
    view, folder = tmp_path / "view", str(tmp_path / "records")
    write_state(folder, _state(0, 3))
    _commit(view, 0, {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
            {"metaData": {"id": "v", "format": {"provider": "parquet"}, "schemaString": "{}", "partitionColumns": []}},
            {"txn": {"appId": APP_ID, "version": 0}}, _add("a.parquet"))
    write_state(folder, _state(1, 9))  # written by a refresh killed before its commit
    assert last_refresh(str(view)) == 0
    found = committed_state(str(view), folder)
    assert found is not None and found.refresh == 0 and found.inputs["/in"].version == 3
    _commit(view, 1, {"metaData": {"id": "v", "format": {"provider": "parquet"}, "schemaString": "{}",
                                   "partitionColumns": [], "configuration": {"x": "1"}}})
    assert committed_state(str(view), folder) is not None  # a metadata-only commit keeps it
    _commit(view, 2, {"remove": {"path": "a.parquet", "dataChange": True}})
    assert committed_state(str(view), folder) is None  # someone else changed the rows: recompute


def test_record_round_trip(tmp_path: Path) -> None:
    state = _state(4, 7)
    assert RefreshState.from_json(state.to_json()) == state
    for n in range(6):
        write_state(str(tmp_path), _state(n, n))
    assert len(list(tmp_path.glob("*.json"))) == 3  # the newest kept

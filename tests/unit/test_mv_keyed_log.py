"""The keyed recomputes' touched key values read from an input's log (framework/incremental/keyed.py ``touched``):
a partition value is taken from the log, and a change whose partition values are not logged is refused rather
than read as NULL (which would recompute the wrong partition and leave the right one stale)."""

from __future__ import annotations

import json
from pathlib import Path

from framework.incremental.analysis import Issue
from framework.incremental.changes import Snapshot
from framework.incremental.keyed import Keys, touched

SCHEMA = {"type": "struct", "fields": [{"name": "p", "type": "integer", "nullable": True, "metadata": {}},
                                       {"name": "v", "type": "long", "nullable": True, "metadata": {}}]}


def _table(root: Path, second_commit: list[dict[str, object]]) -> Snapshot:
    log = root / "_delta_log"
    log.mkdir(parents=True)
    first = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
             {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                           "schemaString": json.dumps(SCHEMA), "partitionColumns": ["p"], "configuration": {}}},
             {"add": {"path": "p=1/a.parquet", "partitionValues": {"p": "1"}, "size": 10, "modificationTime": 0,
                      "dataChange": True}}]
    for version, actions in enumerate((first, second_commit)):
        (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))
    return Snapshot(str(root), 1, "t", json.dumps(SCHEMA), (), 10, True, ("p",))


KEYS = Keys(("p",), ("p",), ("int",))


def test_logged_partition_values_are_the_touched_keys(tmp_path: Path) -> None:
    snap = _table(tmp_path, [{"add": {"path": "p=2/b.parquet", "partitionValues": {"p": "2"}, "size": 10,
                                      "modificationTime": 0, "dataChange": True}},
                             {"remove": {"path": "p=1/a.parquet", "partitionValues": {"p": "1"}, "dataChange": True,
                                         "extendedFileMetadata": True}},
                             {"add": {"path": "p=9/c.parquet", "partitionValues": {"p": None}, "size": 10,
                                      "modificationTime": 0, "dataChange": True}}])
    assert touched(snap, 0, KEYS) == ({(1,), (2,), (None,)}, 0)


def test_a_remove_without_partition_values_is_not_a_null_key(tmp_path: Path) -> None:
    snap = _table(tmp_path, [{"remove": {"path": "p=1/a.parquet", "dataChange": True}}])
    found = touched(snap, 0, KEYS)
    assert isinstance(found, Issue) and found.issue_type == "CHANGES_UNAVAILABLE"


def test_an_extended_remove_leaves_a_null_partition_value_out(tmp_path: Path) -> None:
    """Delta 4.4's UPDATE logs the remove of a file of the NULL partition with ``extendedFileMetadata`` and an
    empty ``partitionValues`` map: the key is NULL (measured on a real log, tests/integration/mv/test_keyed.py)."""
    snap = _table(tmp_path, [{"remove": {"path": "p=__HIVE_DEFAULT_PARTITION__/a.parquet", "partitionValues": {},
                                         "dataChange": True, "extendedFileMetadata": True}}])
    assert touched(snap, 0, KEYS) == ({(None,)}, 0)

"""The checksum of a driver commit follows from the previous version's and the commit's actions (pure part)."""

from __future__ import annotations

from framework.storage.checksum import next_checksum

PROTOCOL = {"minReaderVersion": 1, "minWriterVersion": 2}
METADATA = {"id": "t", "schemaString": "{}", "partitionColumns": [], "configuration": {}}


def _add(path: str, size: int) -> dict[str, object]:
    return {"add": {"path": path, "size": size, "dataChange": True}}


def test_a_new_table_counts_its_files_and_transactions() -> None:
    first = next_checksum({"tableSizeBytes": 0, "numFiles": 0, "setTransactions": [], "domainMetadata": []},
                          [{"protocol": PROTOCOL}, {"metaData": METADATA}, {"txn": {"appId": "q", "version": 0}},
                           _add("a", 10), _add("b", 5)])
    assert first is not None
    assert (first["numFiles"], first["tableSizeBytes"], first["protocol"], first["metadata"]) == (2, 15, PROTOCOL,
                                                                                                 METADATA)
    assert first["setTransactions"] == [{"appId": "q", "version": 0}]
    later = next_checksum(first, [{"txn": {"appId": "q", "version": 1}}, _add("c", 1),
                                  {"remove": {"path": "a", "size": 10}}])
    assert later is not None and (later["numFiles"], later["tableSizeBytes"]) == (2, 6)
    assert later["setTransactions"] == [{"appId": "q", "version": 1}] and later["domainMetadata"] == []


def test_what_cannot_be_derived_writes_no_checksum() -> None:
    assert next_checksum(None, [_add("a", 1)]) is None  # no checksum for the previous version
    base = {"tableSizeBytes": 1, "numFiles": 1, "protocol": PROTOCOL, "metadata": METADATA}
    assert next_checksum(base, [{"remove": {"path": "a"}}]) is None  # a removed file of unknown size
    assert next_checksum(base, [{"remove": {"path": "a", "size": 1, "deletionVector": {"x": 1}}}]) is None
    kept = next_checksum({**base, "fileSizeHistogram": {"x": 1}, "allFiles": []}, [_add("b", 2)])
    assert kept is not None and "fileSizeHistogram" not in kept and "allFiles" not in kept
    assert "setTransactions" not in kept  # unknown before: still unknown

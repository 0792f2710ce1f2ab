"""What changed in a Delta input since the version a view last saw, from the input's log on the driver (no Spark
job): the files its commits appended, or why its changes are not appends (an update, a delete, an overwrite,
a schema change: rows the view holds may be gone). Its size comes from the same log (the cost model).

Only inputs whose files a plain Parquet read returns as their rows (``storage.plain.plain_files``: no partition
columns, no column mapping, no deletion vectors) have their appends read this way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from framework.incremental.analysis import Issue
from framework.storage.plain import file_path, plain_files
from framework.storage.url import is_local

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

_ANY_SIZE = 1 << 62


@dataclass(frozen=True)
class Snapshot:
    """One input as of now: its version, table id, schema (JSON), live files and their bytes."""

    path: str
    version: int
    table_id: str
    schema_json: str
    files: tuple[str, ...]
    table_bytes: int
    plain: bool
    partition_columns: tuple[str, ...] = ()

    def schema(self) -> StructType:
        """The input's schema."""
        from pyspark.sql.types import StructType

        return StructType.fromJson(json.loads(self.schema_json))

    def read(self, spark: SparkSession, files: tuple[str, ...] | None = None, *, max_plain_bytes: int = -1) -> DataFrame:
        """The input's rows as of :attr:`version` (``files``: only those of its live files). A whole table larger
        than ``max_plain_bytes`` (when not negative) is read through Delta at that version, with its data
        skipping; a smaller one as the Parquet files live in its log (no snapshot reconstruction)."""
        chosen = self.files if files is None else files
        large = files is None and 0 <= max_plain_bytes < self.table_bytes
        if not self.plain or large or (files is None and not chosen):  # empty: still a Delta relation
            return spark.read.format("delta").option("versionAsOf", self.version).load(self.path)
        return spark.read.schema(self.schema()).parquet(*chosen)  # none: an empty relation, no Spark job


@dataclass(frozen=True)
class Change:
    """An input's change since ``seen``: the appended files (absolute), their bytes and rows, or the issue."""

    snapshot: Snapshot
    seen: int
    appended: tuple[str, ...] = ()
    appended_bytes: int = 0
    appended_rows: int = 0
    issue: Issue | None = None
    feed: bool = False  # not append-only, but readable from the change data feed (ROW_BASED's signed changes)

    @property
    def unchanged(self) -> bool:
        """No commit since ``seen``."""
        return self.issue is None and self.seen == self.snapshot.version


def snapshot(path: str) -> Snapshot | None:
    """The input at ``path`` as of now, or None when it has no readable log."""
    from framework.storage.log import latest_version, live_files, protocol_and_metadata

    plain = plain_files(path, _ANY_SIZE) if is_local(path) else None
    if plain is not None:
        files = tuple(file_path(path, name) for name in plain.files)
        return Snapshot(path, plain.version, str(plain.metadata.get("id")), plain.metadata["schemaString"], files,
                        sum(int(f.get("size") or 0) for f in plain.files.values()), True)
    found = protocol_and_metadata(path)
    version = latest_version(path)
    if found is None or found[2] is None or version is None:
        return None
    metadata = found[2]
    live = live_files(path) if is_local(path) else None  # its size, for the cost model
    return Snapshot(path, version, str(metadata.get("id")), metadata["schemaString"], (),
                    sum(int(f.get("size") or 0) for f in (live or {}).values()), False,
                    tuple(metadata.get("partitionColumns") or ()))


def change_since(snap: Snapshot, seen: int, seen_table_id: str) -> Change:
    """What the commits after version ``seen`` did to the input (see the module's docstring)."""
    from framework.storage.log import file_records

    if snap.table_id != seen_table_id:
        return Change(snap, seen, issue=Issue("INPUT_REPLACED", f"{snap.path} is another table than last time"))
    if snap.version < seen:
        return Change(snap, seen, issue=Issue("INPUT_REPLACED", f"{snap.path} is older than last time"))
    if snap.version == seen:
        return Change(snap, seen)  # unchanged, whatever its layout
    if not snap.plain:
        return Change(snap, seen, issue=Issue("INPUT_LAYOUT", f"{snap.path}: partitioned, column-mapped or with "
                                                              "deletion vectors"))
    appended: list[str] = []
    size = rows = 0
    for version in range(seen + 1, snap.version + 1):
        actions = _commit(snap.path, version)
        if actions is None:
            return Change(snap, seen, issue=Issue("CHANGES_UNAVAILABLE", f"{snap.path}: commit {version} is gone "
                                                                         "from the log"))
        issue = _not_append(snap.path, version, actions)
        if issue is not None and issue.issue_type == "CHANGES_NOT_APPEND_ONLY" and _feed_enabled(snap.path):
            return _from_feed(snap, seen, issue)
        if issue is not None:
            return Change(snap, seen, issue=issue)
        for action in actions:
            add = action.get("add")
            if isinstance(add, dict) and add.get("dataChange", True):
                appended.append(file_path(snap.path, str(add["path"])))
                size += int(add.get("size") or 0)
                rows += file_records(add)
    return Change(snap, seen, tuple(appended), size, rows)


def _feed_enabled(path: str) -> bool:
    """Whether the input records its change data feed (``delta.enableChangeDataFeed``)."""
    from framework.storage.log import protocol_and_metadata

    found = protocol_and_metadata(path)
    configuration = ((found[2] if found is not None else None) or {}).get("configuration") or {}
    return str(configuration.get("delta.enableChangeDataFeed", "false")).lower() == "true"


def _from_feed(snap: Snapshot, seen: int, issue: Issue) -> Change:
    """A change that updated or deleted rows, to be read from the change data feed: its bytes (the files its
    commits added, removed or wrote as change data) for the cost model; a metadata change in the range (the feed
    may have been off, or the schema changed) is an issue instead."""
    size = 0
    for version in range(seen + 1, snap.version + 1):
        actions = _commit(snap.path, version)
        if actions is None:
            return Change(snap, seen, issue=Issue("CHANGES_UNAVAILABLE", f"{snap.path}: commit {version} is gone "
                                                                         "from the log"))
        for action in actions:
            if isinstance(action.get("metaData"), dict):
                return Change(snap, seen, issue=Issue("INPUT_SCHEMA_CHANGED", f"{snap.path}: version {version} "
                                                                              "changed the table's metadata"))
            for kind in ("add", "remove", "cdc"):
                item = action.get(kind)
                if isinstance(item, dict) and (kind == "cdc" or item.get("dataChange", True)):
                    size += int(item.get("size") or 0)
    return Change(snap, seen, appended_bytes=size, issue=issue, feed=True)


def _not_append(path: str, version: int, actions: list[dict[str, Any]]) -> Issue | None:
    for action in actions:
        if isinstance(action.get("remove"), dict) or isinstance(action.get("cdc"), dict):
            return Issue("CHANGES_NOT_APPEND_ONLY", f"{path}: version {version} updated, deleted or overwrote rows")
        if isinstance(action.get("metaData"), dict):
            return Issue("INPUT_SCHEMA_CHANGED", f"{path}: version {version} changed the table's metadata")
        add = action.get("add")
        if isinstance(add, dict) and (add.get("deletionVector") or add.get("partitionValues")):
            return Issue("INPUT_LAYOUT", f"{path}: version {version} added a file with a deletion vector or "
                                         "partition values")
    return None


def _commit(path: str, version: int) -> list[dict[str, Any]] | None:
    """The actions of one JSON commit of a local table, or None when it is not there."""
    from framework.storage.log import commit_actions

    return commit_actions(path, version)

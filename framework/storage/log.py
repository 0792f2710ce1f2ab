"""Cheap, driver-side questions about a Delta table's log (its JSON commit files; for the protocol and metadata,
also its newest checkpoint), asked before a flow starts or before the driver appends to a table
(``framework.storage.driver``), so that Spark jobs can be avoided.

A Delta streaming read that starts without an offset begins with the table's *initial snapshot*: Delta
reconstructs the table state with Spark jobs and lists the snapshot's files through a cached Dataset, about ten
small jobs even for a one-commit table (measured: 12 jobs, 1.5-2 s for a Delta-to-Delta available-now stream of
30 rows; 2 jobs, 0.4-0.5 s with ``startingVersion=0``). When every commit of the table is still in the log and
the table has only ever been appended to, reading its changes from version 0 returns exactly the rows of that
snapshot, without the state reconstruction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from framework.storage import state_files
from framework.storage.url import StoragePath, is_local

DRIVER_ENGINE_INFO = "medallion-framework driver commit"  # commitInfo.engineInfo of framework.storage.driver's commits
MAX_COMMITS = 100  # above this, replaying the JSON commits on the driver is no longer clearly cheaper
_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\.\d+\.\d+)?(\.[0-9a-f-]+)?\.parquet$")


class _Unreadable(Exception):
    """The log is missing or a commit does not parse: the caller answers "cannot tell"."""


def _listing(table_path: str | Path) -> tuple[Path, list[int], int]:
    """The log folder, its JSON commit versions (ascending) and its newest checkpoint version (-1 if none)."""
    if not is_local(table_path):  # an object store: listed through Hadoop; its commits are read by Delta only
        try:
            names = state_files.names(f"{str(table_path).rstrip('/')}/_delta_log")
        except Exception:  # py4j: the store cannot be listed (the update's check said why already)
            raise _Unreadable from None
        log = Path("/nonexistent-object-store-log")  # reading a commit of it fails: _Unreadable
    else:
        log = Path(str(table_path).removeprefix("file:")) / "_delta_log"
        try:
            names = [p.name for p in log.iterdir()]
        except OSError:
            raise _Unreadable from None
    versions = sorted(int(m.group(1)) for m in map(_COMMIT.match, names) if m)
    checkpoint = max((int(m.group(1)) for m in map(_CHECKPOINT.match, names) if m), default=-1)
    return log, versions, checkpoint


def _actions(log: Path, version: int) -> Iterator[dict[str, Any]]:
    """The actions of one JSON commit."""
    try:
        lines = (log / f"{version:020d}.json").read_text(encoding="utf-8").splitlines()
        for line in lines:
            if line.strip():
                action = json.loads(line)
                if not isinstance(action, dict):
                    raise _Unreadable
                yield action
    except (OSError, ValueError):
        raise _Unreadable from None


def commit_versions(table_path: str | Path) -> list[int]:
    """The versions of the table's JSON commits, ascending; empty when its log cannot be listed."""
    try:
        return _listing(table_path)[1]
    except _Unreadable:
        return []


def commit_actions(table_path: str | Path, version: int) -> list[dict[str, Any]] | None:
    """The actions of the table's JSON commit ``version``, or None when it is not there or cannot be read (an
    object store's commits are read by Delta only)."""
    try:
        log = _listing(table_path)[0]
        return list(_actions(log, version))
    except _Unreadable:
        return None


def appended_since_creation(table_path: str | Path, max_commits: int = MAX_COMMITS) -> bool:
    """True when streaming the table's changes from version 0 yields exactly its latest snapshot.

    That holds when the log has every commit from version 0 as JSON (none cleaned up, at most ``max_commits``
    of them, no checkpoint newer than the last commit), no commit removed data (a ``remove`` with
    ``dataChange`` true: a delete, an update, a MERGE or an overwrite; compaction, which rewrites files with
    ``dataChange`` false, is fine because a stream skips it), and the schema and partitioning never changed.
    Anything unexpected in the log answers False, which only means the stream takes Delta's usual path.
    """
    try:
        log, versions, checkpoint = _listing(table_path)
        if not versions or len(versions) > max_commits or versions != list(range(len(versions))) \
                or checkpoint > versions[-1]:
            return False
        layouts = set()
        for version in versions:
            for action in _actions(log, version):
                removed = action.get("remove")
                if removed is not None and (not isinstance(removed, dict) or removed.get("dataChange", True)):
                    return False
                metadata = action.get("metaData")
                if isinstance(metadata, dict):
                    layouts.add((metadata.get("schemaString"), tuple(metadata.get("partitionColumns") or ())))
        return len(layouts) <= 1
    except _Unreadable:
        return False


def created_with_id(table_path: str | Path, table_id: str) -> bool:
    """Whether version 0 of the table (still in its log) was created with the id ``table_id``: False after a
    REPLACE TABLE (a full refresh keeps the history, but the table gets a new id), whose version 0 a stream
    restarted from ``startingVersion=0`` would refuse as another table."""
    try:
        log, versions, _checkpoint = _listing(table_path)
        if not versions or versions[0] != 0:
            return False
        found = [a["metaData"] for a in _actions(log, 0) if isinstance(a.get("metaData"), dict)]
    except _Unreadable:
        return False
    return bool(found) and found[-1].get("id") == table_id


def latest_metadata(table_path: str | Path, max_commits: int = MAX_COMMITS) -> dict[str, Any] | None:
    """The table's current ``metaData`` action (``configuration``, ``description``, ...) read from its newest
    JSON commits; None when it cannot be told cheaply (it is in a checkpoint, or further back than
    ``max_commits`` commits)."""
    try:
        log, versions, checkpoint = _listing(table_path)
        for version in reversed(versions[-max_commits:]):
            if version <= checkpoint:
                return None
            found = [a["metaData"] for a in _actions(log, version) if isinstance(a.get("metaData"), dict)]
            if found:
                return dict(found[-1])
    except _Unreadable:
        return None
    return None


def has_log(table_path: str | StoragePath) -> bool:
    """True when the folder has a Delta log (``_delta_log``), committed to or not (a full refresh's truncated
    table, a write that failed before its first commit); local or on an object store."""
    return state_files.exists(f"{str(table_path).rstrip('/')}/_delta_log")


def has_commit(table_path: str | Path) -> bool:
    """True when the folder holds a Delta table: at least one commit or checkpoint in its log. A write that
    failed before its first commit leaves a ``_delta_log`` with no commit (staged commits only)."""
    try:
        _log, versions, checkpoint = _listing(table_path)
    except _Unreadable:
        return False
    return bool(versions) or checkpoint >= 0


def latest_version(table_path: str | Path) -> int | None:
    """The table's newest version from its log listing (no Spark), or None when it has no commit."""
    try:
        _log, versions, checkpoint = _listing(table_path)
    except _Unreadable:
        return None
    newest = max([*versions, checkpoint])
    return newest if newest >= 0 else None


def committers_since(table_path: str | Path, after: int | None) -> dict[str, int]:
    """How many commits after version ``after`` (None: every commit) each engine made: ``driver`` for the
    framework's driver writer (``framework.storage.driver``), ``spark`` for Delta's own (Spark's) writer, read from
    each commit's ``commitInfo.engineInfo``. Empty when the log cannot be read (an object store's)."""
    counts: dict[str, int] = {}
    try:
        log, versions, _checkpoint = _listing(table_path)
        for version in versions:
            if after is not None and version <= after:
                continue
            info: dict[str, Any] = next((a["commitInfo"] for a in _actions(log, version) if "commitInfo" in a), {})
            engine = "driver" if info.get("engineInfo") == DRIVER_ENGINE_INFO else "spark"
            counts[engine] = counts.get(engine, 0) + 1
    except _Unreadable:
        return {}
    return counts


def checkpoint_version(table_path: str | Path) -> tuple[list[int], int]:
    """The table's JSON commit versions (ascending; empty when there is no log) and its newest checkpoint
    version (-1 if none)."""
    try:
        _log, versions, checkpoint = _listing(table_path)
    except _Unreadable:
        return [], -1
    return versions, checkpoint


def protocol_and_metadata(table_path: str | Path) -> tuple[int, dict[str, Any] | None, dict[str, Any] | None] | None:
    """The table's newest version with its current ``protocol`` and ``metaData`` actions, read on the driver from
    the JSON commits after the newest checkpoint and, for what they do not change, from that checkpoint's
    Parquet files. ``(-1, None, None)`` when the folder has no commit yet; None when the log cannot be read
    this way (a gap in the commits, an unreadable file)."""
    try:
        log, versions, checkpoint = _listing(table_path)
    except _Unreadable:
        return -1, None, None  # no log folder: a new table
    newest = max([*versions, checkpoint])
    if newest < 0:
        return -1, None, None
    tail = [v for v in versions if v > checkpoint]
    if tail != list(range(checkpoint + 1, newest + 1)):
        return None
    found: dict[str, dict[str, Any]] = {}
    try:
        for version in reversed(tail):
            in_commit: dict[str, dict[str, Any]] = {}
            for action in _actions(log, version):
                for kind in ("protocol", "metaData"):
                    if isinstance(action.get(kind), dict):
                        in_commit[kind] = action[kind]  # the last one of a commit wins
            for kind, value in in_commit.items():
                found.setdefault(kind, value)  # and a newer commit wins over an older one
            if len(found) == 2:
                break
    except _Unreadable:
        return None
    if len(found) < 2 and checkpoint >= 0:
        from_checkpoint = _checkpoint_actions(log, checkpoint)
        if from_checkpoint is None:
            return None
        found = {**from_checkpoint, **found}
    return newest, found.get("protocol"), found.get("metaData")


def _checkpoint_actions(log: Path, version: int) -> dict[str, dict[str, Any]] | None:
    """``protocol`` and ``metaData`` from the Parquet checkpoint of ``version`` (its maps as dicts)."""
    import pyarrow.parquet as pq

    found: dict[str, dict[str, Any]] = {}
    try:
        for part in sorted(log.glob(f"{version:020d}.checkpoint*.parquet")):
            for row in pq.read_table(part, columns=["protocol", "metaData"]).to_pylist():
                for kind in ("protocol", "metaData"):
                    if row.get(kind) is not None:
                        found[kind] = _maps_as_dicts(row[kind])
    except (OSError, ValueError, KeyError):
        return None
    return found


def _maps_as_dicts(action: dict[str, Any]) -> dict[str, Any]:
    """Pyarrow reads a Parquet map as a list of (key, value) pairs; the JSON log has objects."""
    out = dict(action)
    for key in ("configuration", "partitionValues", "tags"):
        if isinstance(out.get(key), list):
            out[key] = dict(out[key])
    fmt = out.get("format")
    if isinstance(fmt, dict) and isinstance(fmt.get("options"), list):
        out["format"] = {**fmt, "options": dict(fmt["options"])}
    return out


def file_records(add: dict[str, Any]) -> int:
    """The rows of the data file an ``add`` action logs (its statistics' ``numRecords``; 0 when not logged)."""
    try:
        return int(json.loads(str(add.get("stats") or "{}")).get("numRecords", 0))
    except (ValueError, TypeError, AttributeError):
        return 0


def live_files(table_path: str | Path) -> dict[str, dict[str, Any]] | None:
    """The table's current data files (``add`` actions by path), replayed on the driver from its newest
    checkpoint and the JSON commits after it; None when that cannot be done this way."""
    state = replay(table_path)
    return None if state is None else state.files


@dataclass(frozen=True)
class LogState:
    """What a replay of the log on the driver found: the live data files (``add`` actions by path) and the
    newest version each application committed with a ``txn`` action (Delta's idempotent writes)."""

    files: dict[str, dict[str, Any]]
    transactions: dict[str, int]


def replay(table_path: str | Path) -> LogState | None:
    """Replay the table's newest checkpoint and the JSON commits after it on the driver; an empty state for a
    folder without a log, None when the log cannot be replayed this way (a gap, an unreadable file)."""
    try:
        log, versions, checkpoint = _listing(table_path)
    except _Unreadable:
        return LogState({}, {})
    newest = max([*versions, checkpoint])
    tail = [v for v in versions if v > checkpoint]
    if tail != list(range(checkpoint + 1, newest + 1)):
        return None
    files: dict[tuple[str, str | None], dict[str, Any]] = {}
    transactions: dict[str, int] = {}
    if checkpoint >= 0 and not _replay_checkpoint(log, checkpoint, files, transactions):
        return None
    try:
        for version in tail:
            for action in _actions(log, version):
                _apply(action, files, transactions)
    except _Unreadable:
        return None
    return LogState({path: add for (path, _dv), add in files.items()}, transactions)


def _file_id(action: dict[str, Any]) -> tuple[str, str | None]:
    """A data file's identity in the log: its path and its deletion vector's id. A commit that deletes rows of a
    file removes the file as it was and adds it back with a deletion vector, both under the same path."""
    dv = action.get("deletionVector")
    dv_id = f"{dv.get('storageType')}{dv.get('pathOrInlineDv')}@{dv.get('offset')}" if isinstance(dv, dict) else None
    return str(action.get("path")), dv_id


def _apply(action: dict[str, Any], files: dict[tuple[str, str | None], dict[str, Any]],
           transactions: dict[str, int]) -> None:
    if isinstance(action.get("add"), dict):
        files[_file_id(action["add"])] = action["add"]
    elif isinstance(action.get("remove"), dict):
        files.pop(_file_id(action["remove"]), None)
    elif isinstance(action.get("txn"), dict) and action["txn"].get("appId") is not None:
        transactions[str(action["txn"]["appId"])] = int(action["txn"].get("version", -1))


def _replay_checkpoint(log: Path, checkpoint: int, files: dict[tuple[str, str | None], dict[str, Any]],
                       transactions: dict[str, int]) -> bool:
    """The ``add`` and ``txn`` actions of a Parquet checkpoint; False when it cannot be read."""
    import pyarrow.parquet as pq

    try:
        for part in sorted(log.glob(f"{checkpoint:020d}.checkpoint*.parquet")):
            names = set(pq.read_schema(part).names)
            for row in pq.read_table(part, columns=[c for c in ("add", "txn") if c in names]).to_pylist():
                if row.get("add") is not None:
                    _apply({"add": _maps_as_dicts(row["add"])}, files, transactions)
                elif row.get("txn") is not None:
                    _apply({"txn": row["txn"]}, files, transactions)
    except (OSError, ValueError, KeyError):
        return False
    return True

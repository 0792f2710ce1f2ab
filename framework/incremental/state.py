"""What a materialized view keeps to be refreshed incrementally, and how it survives a kill -9 at any point.

Each refresh of a view whose policy is not FULL is refresh number ``n``. Before its data commit it writes
``<checkpoint>/mv_refresh/<n>.json`` (the input versions and table ids it read, the query's fingerprint, the
technique; written whole: a temporary file renamed into place), then commits the view's data with Delta's
``txn`` action (app id :data:`APP_ID`, version ``n``) in the same commit as the data (Spark's
``txnAppId``/``txnVersion`` writer options, or the driver writer's ``txn``). The state in force is the file of
the newest ``txn`` of that app id in the view's log, and only while no commit after that one changed the view's
data (a manual DELETE, a REPLACE TABLE): a refresh killed after writing its file but before its commit left the
previous ``txn`` in the log, so its file is ignored and the refresh runs again from the previous state; killed
during the commit, Delta's commit is atomic. The folder is beside the flow's checkpoint: a full refresh clears it,
and the next refresh recomputes.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from framework import internals
from framework.storage import state_files
from framework.storage.log import commit_actions, commit_versions, has_commit, replay
from framework.storage.url import is_local

APP_ID = "medallion-materialized-view-refresh"
_SCAN = 100  # commits looked at, newest first, to find the one with the newest txn
_KEEP = 3  # state files kept


@dataclass(frozen=True)
class SeenInput:
    """An input as a refresh read it."""

    version: int
    table_id: str


@dataclass(frozen=True)
class RefreshState:
    """One refresh's record (see the module's docstring)."""

    refresh: int
    fingerprint: str
    technique: str
    inputs: dict[str, SeenInput] = field(default_factory=dict)
    seconds: float = 0.0

    def to_json(self) -> str:
        """The record as JSON."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RefreshState:
        """The record from :meth:`to_json`'s text."""
        data = json.loads(text)
        inputs = {k: SeenInput(int(v["version"]), str(v["table_id"])) for k, v in data.get("inputs", {}).items()}
        return cls(int(data["refresh"]), str(data["fingerprint"]), str(data["technique"]), inputs,
                   float(data.get("seconds", 0.0)))


def state_folder(checkpoint: str) -> str:
    """Where a flow's refresh records are."""
    return f"{str(checkpoint).rstrip('/')}/mv_refresh"


def last_refresh(view_path: str) -> int:
    """The newest refresh number committed to the view (-1: none): from the log replayed on the driver, else (an
    object store's log, which the driver does not read) from Delta's snapshot. A wrong -1 would give the next
    refresh a ``txn`` Delta has seen, and Delta would skip its write."""
    if not state_files.exists(view_path):
        return -1
    state = replay(view_path)
    if state is not None:
        return state.transactions.get(APP_ID, -1)
    if is_local(view_path) and not has_commit(view_path):
        return -1
    from pyspark.sql import SparkSession

    found = internals.delta_snapshot(SparkSession.builder.getOrCreate(), view_path).transactions().get(APP_ID)
    return int(found.get()) if found.isDefined() else -1


def committed_state(view_path: str, folder: str) -> RefreshState | None:
    """The record of the refresh whose commit is the view's state now, or None (recompute)."""
    refresh = last_refresh(view_path)
    if refresh < 0 or not _only_metadata_since(view_path, refresh):
        return None
    path = f"{folder}/{refresh:020d}.json"
    if not state_files.exists(path):
        return None
    try:
        state = RefreshState.from_json(state_files.read_text(path))
    except (ValueError, KeyError, TypeError):
        return None
    return state if state.refresh == refresh else None


def write_state(folder: str, state: RefreshState) -> None:
    """Write ``state`` whole before its commit (a renamed temporary file locally; an object is atomic)."""
    path = f"{folder}/{state.refresh:020d}.json"
    if not is_local(path):
        state_files.write_text(path, state.to_json())
        return
    target = Path(path.removeprefix("file:"))
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
    temp.write_text(state.to_json(), encoding="utf-8")
    os.replace(temp, target)
    for old in sorted(target.parent.glob("*.json"))[:-_KEEP]:
        old.unlink(missing_ok=True)


def _only_metadata_since(view_path: str, refresh: int) -> bool:
    """Whether the commit carrying refresh ``refresh``'s txn is found (newest first) before any other commit
    that changed the view's data."""
    if not is_local(view_path):
        return False
    for version in commit_versions(view_path)[::-1][:_SCAN]:
        actions = commit_actions(view_path, version)
        if actions is None:
            actions = [{"remove": {"dataChange": True}}]  # unreadable: treated as a data change
        if any(_txn_of(a) == refresh for a in actions):
            return True
        if any(_changes_data(a) for a in actions):
            return False
    return False


def _txn_of(action: dict[str, Any]) -> int | None:
    txn = action.get("txn")
    return int(txn["version"]) if isinstance(txn, dict) and txn.get("appId") == APP_ID else None


def _changes_data(action: dict[str, Any]) -> bool:
    for kind in ("add", "remove", "cdc"):
        item = action.get(kind)
        if isinstance(item, dict) and item.get("dataChange", True):
            return True
    return False

"""Delta plumbing shared by the CDC targets: table creation, idempotent writes, the state folder's metadata.

Idempotency: every write of a batch carries Delta's ``txnAppId``/``txnVersion`` (session confs for MERGE/DELETE,
writer options for appends). Each table of a batch gets its own app id (``<app_id>`` for the target,
``<app_id>/<table>`` for state tables), so a replayed batch skips exactly the writes that were already committed.
The confs are set on a child session (``SparkSession.newSession()``) private to the calling thread, so concurrent
flows that share the caller's session never see them.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from framework import internals
from framework.storage import state_files
from framework.storage.log import has_log

TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
TXN_VERSION = "spark.databricks.delta.write.txnVersion"
TABLE_PROPERTIES = {"delta.enableDeletionVectors": "true"}
METADATA_FILE = "cdc_target.json"
# In a table's folder (Delta ignores files it does not log): a full refresh truncated the table, and the next write
# replaces it (schema included) as if it were new; see ``truncate_for_refresh``.
REPLACE_MARK = "_medallion_replace"


def replace_pending(path: str) -> bool:
    """True when a full refresh truncated the table at ``path`` and nothing was written to it since."""
    return state_files.exists(f"{path.rstrip('/')}/{REPLACE_MARK}")


def delta_exists(spark: SparkSession, path: str) -> bool:
    """True when ``path`` holds a Delta table the CDC writers continue: not one a full refresh truncated (that one
    they treat as new, and their first write replaces it)."""
    return has_log(path) and not replace_pending(path)


def _replaced(path: str) -> None:
    state_files.remove(f"{path.rstrip('/')}/{REPLACE_MARK}")


def create_table(spark: SparkSession, path: str, schema: StructType) -> None:
    """Create an empty Delta table with deletion vectors enabled (so MERGE rewrites only changed rows); a table a
    full refresh truncated is replaced instead (one commit, its history kept)."""
    builder = _new_table_writer(spark.createDataFrame([], schema), path)
    builder.save(path)
    _replaced(path)


def _new_table_writer(df: DataFrame, path: str) -> Any:
    """A writer that creates the table at ``path`` with :data:`TABLE_PROPERTIES` or, after a full refresh
    truncated it, overwrites it with ``df``'s schema."""
    if replace_pending(path):
        return df.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
    return df.write.format("delta").mode("append").options(**TABLE_PROPERTIES)


def truncate_for_refresh(spark: SparkSession, path: str) -> None:
    """Full refresh of the CDC table at ``path``: one commit that removes every row (its history and id kept,
    as Databricks' full refresh truncates), and a mark so that the writers treat it as new. The mark comes
    first: after a crash in between, the next write replaces whatever is there."""
    from delta.tables import DeltaTable

    if not has_log(path):
        return
    state_files.write_text(f"{path.rstrip('/')}/{REPLACE_MARK}", "")
    DeltaTable.forPath(spark, path).delete()


def refresh_state(spark: SparkSession, state_path: str) -> None:
    """Full refresh of a CDC target's hidden state folder: its Delta tables truncated (``truncate_for_refresh``),
    every other file (metadata, snapshot progress) deleted."""
    folder = state_path.rstrip("/")
    for name in state_files.names(folder):
        child = f"{folder}/{name}"
        if has_log(child):
            truncate_for_refresh(spark, child)
        else:
            state_files.remove(child)


def remove_tree(path: str) -> None:
    """Delete a folder if it exists, local or on an object store."""
    state_files.remove(path)


_child_sessions = threading.local()


def writer_session(spark: SparkSession) -> SparkSession:
    """A child session of ``spark`` private to the calling thread (created once per thread and parent).

    Writes of one thread run one after the other, so the txn confs set on it never leak into another write; a new
    session per target would cost a cold analyzer and planner on every update.
    """
    cache: dict[int, SparkSession] = getattr(_child_sessions, "by_parent", None) or {}
    _child_sessions.by_parent = cache
    key = id(internals.java_session(spark))
    session = cache.get(key)
    if session is None:
        session = cache[key] = spark.newSession()
        # The engine materializes every MERGE source itself, so Delta need not copy it again.
        session.conf.set("spark.databricks.delta.merge.materializeSource", "none")
    return session


_followed: dict[int, dict[str, str]] = {}  # what _follow_parent set on each child session


def _follow_parent(child: SparkSession, parent: SparkSession) -> None:
    """Give the child session the settings an update set on the parent for its flows (``session_conf``: a small
    update's), and take back the ones set for an earlier update."""
    from framework.session_settings import session_conf_in_effect

    wanted = session_conf_in_effect(parent)
    applied = _followed.setdefault(id(internals.java_session(child)), {})
    for key in [k for k in applied if k not in wanted]:
        child.conf.unset(key)
        del applied[key]
    for key, value in wanted.items():
        if applied.get(key) != value:
            child.conf.set(key, value)
            applied[key] = value


class TxnWriter:
    """Runs Delta writes idempotently under (app id, version) in the thread's private child session."""

    def __init__(self, spark: SparkSession) -> None:
        self.parent = spark

    @property
    def session(self) -> SparkSession:
        """The child session the writes run in."""
        return writer_session(self.parent)

    def run(self, app_id: str, version: int, action: Any) -> Any:
        """Call ``action(session)`` with the txn confs set; Delta skips the write if already committed."""
        session = self.session
        _follow_parent(session, self.parent)
        session.conf.set(TXN_APP_ID, app_id)
        session.conf.set(TXN_VERSION, str(version))
        try:
            return action(session)
        finally:
            session.conf.unset(TXN_APP_ID)
            session.conf.unset(TXN_VERSION)

    @staticmethod
    def append(df: DataFrame, path: str, app_id: str, version: int, *, merge_schema: bool = False) -> None:
        """Append ``df`` to the Delta table at ``path`` unless (app id, version) was already written there.

        Without a table at ``path`` the append creates it, with :data:`TABLE_PROPERTIES`, in the same commit as
        its rows (and its transaction id). That is cheaper than creating it empty first: Delta checks the
        transaction id of an append to an existing table by reconstructing the table's state with Spark jobs."""
        if delta_exists(df.sparkSession, path):
            writer = df.write.format("delta").mode("append").option("mergeSchema", str(merge_schema).lower())
        else:
            writer = _new_table_writer(df, path)
        writer.option("txnAppId", app_id).option("txnVersion", str(version)).save(path)
        _replaced(path)


def _snapshot(spark: SparkSession, path: str) -> Any:
    return internals.delta_snapshot(spark, path)


def last_txn_version(spark: SparkSession, path: str, app_id: str) -> int | None:
    """The last ``txnVersion`` committed by ``app_id`` into the Delta table at ``path`` (from the log; a full
    refresh's truncation keeps the table's transactions); local or on an object store."""
    if not has_log(path):
        return None
    option = _snapshot(spark, path).transactions().get(app_id)
    return int(option.get()) if option.isDefined() else None


def read_metadata(state_path: str) -> dict[str, Any] | None:
    """The metadata a target was built with (keys, sequence, SCD type), or None for a new target; local or on an
    object store, where the target's state lives."""
    file = f"{state_path.rstrip('/')}/{METADATA_FILE}"
    found: dict[str, Any] | None = json.loads(state_files.read_text(file)) if state_files.exists(file) else None
    return found


def write_metadata(state_path: str, metadata: dict[str, Any]) -> None:
    """Persist the target's metadata atomically (``state_files.write_text``)."""
    text = json.dumps(metadata, indent=2, sort_keys=True, default=str)
    state_files.write_text(f"{state_path.rstrip('/')}/{METADATA_FILE}", text)

"""Delta commits written by the driver, without Spark: Parquet written with pyarrow (one file, or one per core for a
large batch) and one JSON commit, put in place only if no other commit took its version.

Through Spark, even a tiny write is a query, a write job and Delta's commit with its jobs: 0.25-0.45 s of a warm
session on two cores for one event-log append (about ten of them an update of the sample pipeline), about a second
for the overwrite of a small materialized view. Here each is milliseconds of Python:

* :func:`append_rows` appends rows (the event log), :func:`append_arrow` a pyarrow Table;
* :func:`overwrite_arrow` replaces a table's rows with a pyarrow Table (a small materialized view's recompute,
  collected with ``DataFrame.toArrow``; a small APPLY CHANGES target's batch, ``framework.cdc.small``).

Writes of a stream's batches carry Delta's ``txn`` action (``txn=(app id, version)``), as Spark's
``txnAppId``/``txnVersion`` do: a batch replayed after a crash finds its version committed and writes nothing.

Each file's ``add`` carries column statistics that are exact bounds (``framework.storage.stats``), so readers
skip files by them as they do Spark's. Each commit gets Delta's version checksum when the previous version has one (``framework.storage.checksum``), so
that readers take the table's protocol and metadata from it instead of replaying the log with a Spark job.

The tables stay ordinary Delta tables that Spark reads and writes. Only what this writer understands is written
this way: no partition columns, column mapping, constraints, generated or identity columns, or deletion vectors,
and a protocol whose writer features need nothing from a writer that only adds and removes whole files
(``appendOnly``, ``invariants``; ``deletionVectors`` while no live file has one: such a writer never writes one). Anything else raises :class:`NeedsSpark` before a file is written, and the
caller writes through Spark. So does every table that is not on the local file system (``s3a://``): a driver
commit is put in place with a hard link, an atomic put-if-absent that object stores do not offer, so there Spark's
Delta commits through its log store for the scheme (``framework/storage/url.py``). Checkpoints are Delta's own (:func:`checkpoint_if_due`, one Spark call every
``CHECKPOINT_EVERY`` driver commits), so readers never replay a long tail of JSON commits.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from framework.internals import delta_checkpoint
from framework.storage.checksum import write_checksum
from framework.storage.log import (
    DRIVER_ENGINE_INFO,
    LogState,
    checkpoint_version,
    protocol_and_metadata,
    replay,
)
from framework.storage.plain import nullable
from framework.storage.stats import file_stats
from framework.storage.url import is_local

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

ENGINE_INFO = DRIVER_ENGINE_INFO
STREAMING_UPDATE = "STREAMING UPDATE"  # the operation of a streaming sink's commit, in the table's history
CHECKPOINT_EVERY = 100  # driver commits between two checkpoints (Delta checkpoints every 10 of its own commits)
_WHOLE_FILE_WRITER_FEATURES = frozenset({"appendOnly", "invariants", "deletionVectors"})
_COMMIT_ATTEMPTS = 5
ROW_GROUP_ROWS = 131072
PART_MIN_ROWS = 2 * ROW_GROUP_ROWS  # rows per file below which one file is written by one thread


class NeedsSpark(Exception):
    """The table's protocol, layout or schema needs Delta's own writer; the message says what."""


class _AlreadyCommitted(Exception):
    """The commit's ``txn`` (app id, version) is already in the table: nothing to write."""


Txn = tuple[str, int]  # (application id, version) of Delta's idempotent writes


def append_rows(path: str | Path, schema: StructType, rows: Sequence[dict[str, Any]]) -> int:
    """Append ``rows`` (dicts shaped like ``schema``; timestamps as naive UTC datetimes) in one commit, creating
    the table when it has no log yet. Returns the committed version. Raises :class:`NeedsSpark` before writing
    anything when this writer must not write the table."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    table = _local_table(path)
    _current(table, schema, require_schema=True)  # refuse before writing anything
    version = _append(table, schema, pa.Table.from_pylist(list(rows), schema=to_arrow_schema(schema, timezone="UTC")),
                      None)
    assert version is not None  # no txn: never skipped
    return version


def append_arrow(path: str | Path, schema: StructType, data: Any, *, txn: Txn | None = None,
                 description: str | None = None, configuration: dict[str, str] | None = None,
                 streaming: bool = False) -> int | None:
    """Append ``data`` (a pyarrow Table of ``schema``, as ``DataFrame.toArrow`` returns it) in one commit, creating
    the table when it has no log yet (with ``description`` and ``configuration``); no rows commit no file. With
    ``streaming`` the table's history shows the commit as Delta's streaming sink's (``STREAMING UPDATE``, the
    ``txn``'s app id and version as query id and epoch). Returns the version, or None when ``txn`` was committed
    already (nothing written). Raises :class:`NeedsSpark` before writing anything when this writer must not write
    the table."""
    table = _local_table(path)
    schema = nullable(schema)
    version, _protocol, _metadata = _current(table, schema, require_schema=True)
    if version < 0:
        _new_protocol(configuration or {})  # refuse before writing anything
    return _append(table, schema, data, txn, description, configuration, STREAMING_UPDATE if streaming else "Append")


def _append(table: Path, schema: StructType, data: Any, txn: Txn | None, description: str | None = None,
            configuration: dict[str, str] | None = None, mode: str = "Append") -> int | None:
    added = _write_parquet_files(table, data) if data.num_rows else []

    def actions(version: int, protocol: dict[str, Any] | None, metadata: dict[str, Any] | None) -> list[Any]:
        if txn is not None and version >= 0:
            _skip_if_committed(_replayed(table), txn)
        return [*_new_table(schema, version, description, configuration), *_txn_actions(txn),
                *({"add": a} for a in added)]

    return _commit(table, schema, actions, added, mode=mode, require_schema=True)


def overwrite_arrow(path: str | Path, schema: StructType, data: Any, *, description: str | None = None,
                    configuration: dict[str, str] | None = None, txn: Txn | None = None,
                    read_version: int | None = None) -> int | None:
    """Replace the table's rows with ``data`` (a pyarrow Table of ``schema``, as ``DataFrame.toArrow`` returns
    it) in one commit: an ``add`` of each new file (:func:`_write_parquet_files`), a ``remove`` of every live one,
    and the new schema when it changed (``overwriteSchema``). A new table gets ``description`` and ``configuration``. Returns the version,
    or None when ``txn`` was committed already (nothing written). With ``read_version`` (the version ``data`` was
    computed from) a table that moved past it meanwhile is refused with :class:`NeedsSpark`."""
    table = _local_table(path)
    schema = nullable(schema)
    _current(table, schema, require_schema=False)
    new_files = _write_parquet_files(table, data)

    def actions(version: int, protocol: dict[str, Any] | None, metadata: dict[str, Any] | None) -> list[Any]:
        if version < 0:
            return [*_new_table(schema, version, description, configuration), *_txn_actions(txn),
                    *({"add": f} for f in new_files)]
        if read_version is not None and version != read_version:
            raise NeedsSpark(f"the table moved from version {read_version} to {version} since it was read")
        state = _replayed(table)
        _skip_if_committed(state, txn)
        now = int(time.time() * 1000)
        removes = [{"remove": {"path": p, "deletionTimestamp": now, "dataChange": True, "extendedFileMetadata": True,
                               "partitionValues": f.get("partitionValues") or {}, "size": f.get("size", 0)}} for p, f in state.files.items()]
        assert metadata is not None
        changed = [] if _schema_of(metadata) == schema else [
            {"metaData": {**metadata, "schemaString": schema.json()}}]
        return [*changed, *_txn_actions(txn), *({"add": f} for f in new_files), *removes]

    return _commit(table, schema, actions, new_files, mode="Overwrite", require_schema=False)


def set_properties(path: str | Path, configuration: dict[str, str], description: str | None = None) -> int:
    """Add ``configuration`` to the table's properties (and set its ``description``) in one metadata-only commit,
    as ``ALTER TABLE ... SET TBLPROPERTIES`` does. Returns the version. Raises :class:`NeedsSpark` for a
    ``delta.*`` property (Delta's writer knows what it needs) or a table this writer must not write."""
    from pyspark.sql.types import StructType

    if any(k.lower().startswith("delta.") for k in configuration):
        raise NeedsSpark("delta.* table properties")

    def actions(version: int, protocol: dict[str, Any] | None, metadata: dict[str, Any] | None) -> list[Any]:
        if version < 0 or metadata is None:
            raise NeedsSpark("no table")
        new = {**metadata, "configuration": {**(metadata.get("configuration") or {}), **configuration}}
        if description is not None:
            new["description"] = description
        return [{"metaData": new}]

    committed = _commit(_local_table(path), StructType([]), actions, [], mode="SET TBLPROPERTIES", require_schema=False)
    assert committed is not None  # no txn: never skipped
    return committed


def _local_table(path: str | Path) -> Path:
    """``path`` as a local folder; :class:`NeedsSpark` for a table on an object store, before anything is read or
    written (only a local file system gives this writer its atomic put-if-absent)."""
    if not is_local(path):
        raise NeedsSpark(f"{path} is not on the local file system: Spark's Delta log store commits there")
    return Path(str(path).removeprefix("file:"))


def _replayed(table: Path) -> LogState:
    """The table's live files and transactions; :class:`NeedsSpark` when a live file has a deletion vector (a
    whole-file writer must not remove it: the rows it hides would come back) or the log cannot be replayed."""
    state = replay(table)
    if state is None or any(f.get("deletionVector") for f in state.files.values()):
        raise NeedsSpark("its live files cannot be listed on the driver")
    return state


def _skip_if_committed(state: LogState, txn: Txn | None) -> None:
    if txn is not None and state.transactions.get(txn[0], -1) >= txn[1]:
        raise _AlreadyCommitted


def _txn_actions(txn: Txn | None) -> list[dict[str, Any]]:
    if txn is None:
        return []
    return [{"txn": {"appId": txn[0], "version": txn[1], "lastUpdated": int(time.time() * 1000)}}]


def check_writable(protocol: dict[str, Any] | None, metadata: dict[str, Any] | None) -> None:
    """Raise :class:`NeedsSpark` when this writer must not commit to a table with this ``protocol`` and
    ``metaData`` (the live files' deletion vectors are the caller's to check)."""
    _check_protocol(protocol)
    _check_metadata(metadata, None)


def check_overwrite(path: str | Path, schema: StructType) -> int:
    """The table's version (-1: none yet); :class:`NeedsSpark` when :func:`overwrite_arrow` would refuse the
    table (nothing is written)."""
    table = _local_table(path)
    version, _protocol, _metadata = _current(table, nullable(schema), require_schema=False)
    if version >= 0:
        _replayed(table)
    return version


def _commit(table: Path, schema: StructType, actions: Any, written: list[dict[str, Any]], *, mode: str,
            require_schema: bool) -> int | None:
    """Put the next commit in place (``actions(version, protocol, metadata)`` builds it on the newest version),
    again on top of a commit another writer put there meanwhile; remove the written files when it fails or
    when its ``txn`` was committed already (then None)."""
    try:
        for _attempt in range(_COMMIT_ATTEMPTS):
            version, protocol, metadata = _current(table, schema, require_schema=require_schema)
            built = actions(version, protocol, metadata)
            if _put_if_absent(table / "_delta_log" / f"{version + 1:020d}.json",
                              _commit_lines(built, version, mode)):
                with contextlib.suppress(OSError):  # without it, readers replay the log
                    write_checksum(table, version + 1, built)
                return version + 1
        raise NeedsSpark(f"{_COMMIT_ATTEMPTS} commits of other writers in a row")
    except _AlreadyCommitted:
        _unlink(table, written)
        return None
    except BaseException:
        _unlink(table, written)
        raise


def _unlink(table: Path, written: list[dict[str, Any]]) -> None:
    for data in written:
        (table / data["path"]).unlink(missing_ok=True)


def checkpoint_if_due(spark: SparkSession, path: str | Path, every: int | None = None) -> bool:
    """Have Delta write a checkpoint (and clean up expired log files) when ``every`` (default
    :data:`CHECKPOINT_EVERY`) commits or more came after the newest one. Returns True when it wrote one."""
    every = CHECKPOINT_EVERY if every is None else every
    versions, newest_checkpoint = checkpoint_version(path)
    if not versions or versions[-1] - max(newest_checkpoint, 0) < every:
        return False
    delta_checkpoint(spark, str(path))
    return True


def _current(table: Path, schema: StructType, *, require_schema: bool
             ) -> tuple[int, dict[str, Any] | None, dict[str, Any] | None]:
    """The newest version (-1 for a new table) with its protocol and metadata, checked: raises
    :class:`NeedsSpark` when this writer must not commit to the table."""
    found = protocol_and_metadata(table)
    if found is None:
        raise NeedsSpark("its log cannot be read on the driver")
    version, protocol, metadata = found
    if version >= 0:
        _check_protocol(protocol)
        _check_metadata(metadata, schema if require_schema else None)
    return version, protocol, metadata


_DELETION_VECTORS_PROTOCOL = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                              "writerFeatures": ["deletionVectors", "invariants", "appendOnly"]}


def _new_protocol(configuration: dict[str, str]) -> dict[str, Any]:
    """The protocol Delta gives a new table with these properties; :class:`NeedsSpark` for a ``delta.*`` property
    other than ``delta.enableDeletionVectors`` (Delta's writer knows what the others need)."""
    delta = {k.lower(): str(v).lower() for k, v in configuration.items() if k.lower().startswith("delta.")}
    if set(delta) - {"delta.enabledeletionvectors"}:
        raise NeedsSpark(f"table properties {sorted(delta)}")
    if delta.get("delta.enabledeletionvectors") == "true":
        return dict(_DELETION_VECTORS_PROTOCOL)
    return {"minReaderVersion": 1, "minWriterVersion": 2}


def _new_table(schema: StructType, version: int, description: str | None = None,
               configuration: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The protocol and metadata a new table's first commit carries (nothing when the table exists)."""
    if version >= 0:
        return []
    protocol = _new_protocol(configuration or {})
    metadata: dict[str, Any] = {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                                "schemaString": schema.json(), "partitionColumns": [],
                                "configuration": dict(configuration or {}), "createdTime": int(time.time() * 1000)}
    if description:
        metadata["description"] = description
    return [{"protocol": protocol}, {"metaData": metadata}]


def _schema_of(metadata: dict[str, Any]) -> StructType:
    from pyspark.sql.types import StructType

    return StructType.fromJson(json.loads(metadata["schemaString"]))


def _check_protocol(protocol: dict[str, Any] | None) -> None:
    if protocol is None:
        raise NeedsSpark("no protocol action found")
    reader, writer = int(protocol.get("minReaderVersion", 1)), int(protocol.get("minWriterVersion", 1))
    features = set(protocol.get("writerFeatures") or [])
    if reader > 3 or writer > 7 or (writer >= 7 and not features <= _WHOLE_FILE_WRITER_FEATURES) \
            or (2 < writer < 7):
        raise NeedsSpark(f"protocol reader {reader} / writer {writer} {sorted(features)}")


def _check_metadata(metadata: dict[str, Any] | None, schema: StructType | None) -> None:
    if metadata is None:
        raise NeedsSpark("no metaData action found")
    if metadata.get("partitionColumns"):
        raise NeedsSpark("the table is partitioned")
    configuration = metadata.get("configuration") or {}
    if configuration.get("delta.columnMapping.mode", "none") != "none":
        raise NeedsSpark("the table maps column names")
    if any(k.startswith("delta.constraints.") for k in configuration) or "delta.generationExpression" in \
            metadata.get("schemaString", "") or "delta.identity." in metadata.get("schemaString", ""):
        raise NeedsSpark("the table has constraints, generated or identity columns")
    if schema is not None and _schema_of(metadata) != schema:
        raise NeedsSpark("the table's schema differs from the rows'")


def _write_parquet_files(table: Path, data: Any) -> list[dict[str, Any]]:
    """Write a pyarrow Table as Parquet files in the table folder; return their ``add`` actions. A table of at
    least two :data:`PART_MIN_ROWS` slices is written as one file per slice (at most one per usable core) by as
    many threads: pyarrow encodes without the GIL, and the driver's cores are otherwise idle while it writes
    (970,000 rows of nine columns: 0.36 s as one file, 0.22 s as two). When one part fails, the others are
    removed before the error goes on (nothing was committed)."""
    parts = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
                data.num_rows // PART_MIN_ROWS)
    if parts <= 1:
        return [_write_parquet(table, data)]
    size = -(-data.num_rows // parts)
    with ThreadPoolExecutor(max_workers=parts, thread_name_prefix="medallion-parquet") as pool:
        futures = [pool.submit(_write_parquet, table, data.slice(start, size))
                   for start in range(0, data.num_rows, size)]
    written = [f.result() for f in futures if f.exception() is None]
    if len(written) < len(futures):
        for add in written:
            (table / add["path"]).unlink(missing_ok=True)
        raise next(e for f in futures if (e := f.exception()) is not None)
    return written


def _write_parquet(table: Path, data: Any) -> dict[str, Any]:
    """Write a pyarrow Table as one Parquet file in the table folder; return its ``add`` action."""
    import pyarrow.parquet as pq

    name = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
    table.mkdir(parents=True, exist_ok=True)
    # row groups Spark can split between tasks when it reads a large file back (pyarrow's default: 1Mi rows)
    pq.write_table(data, table / name, compression="snappy", row_group_size=ROW_GROUP_ROWS)
    stat = (table / name).stat()
    return {"path": name, "partitionValues": {}, "size": stat.st_size,
            "modificationTime": int(stat.st_mtime * 1000), "dataChange": True,
            "stats": file_stats(data)}


def _commit_lines(actions: list[dict[str, Any]], read_version: int, mode: str) -> str:
    files = [a["add"] for a in actions if "add" in a]
    operation, parameters = _operation(mode, actions)
    info: dict[str, Any] = {
        "timestamp": int(time.time() * 1000), "operation": operation,
        "operationParameters": parameters, "isolationLevel": "Serializable",
        "isBlindAppend": mode in ("Append", STREAMING_UPDATE), "engineInfo": ENGINE_INFO, "txnId": str(uuid.uuid4()),
        "operationMetrics": {"numFiles": str(len(files)), "numOutputBytes": str(sum(f["size"] for f in files)),
                             "numOutputRows": str(sum(json.loads(f["stats"])["numRecords"] for f in files))}}
    if read_version >= 0:
        info["readVersion"] = read_version
    return "".join(json.dumps(a, separators=(",", ":")) + "\n" for a in [{"commitInfo": info}, *actions])


def _operation(mode: str, actions: list[dict[str, Any]]) -> tuple[str, dict[str, str]]:
    """The ``operation`` and ``operationParameters`` Delta's history shows for a commit of this ``mode``."""
    if mode in ("Append", "Overwrite"):
        return "WRITE", {"mode": mode, "partitionBy": "[]"}
    if mode == STREAMING_UPDATE:
        txn: dict[str, Any] = next((a["txn"] for a in actions if "txn" in a), {})
        return mode, {"outputMode": "Append", "queryId": str(txn.get("appId", "")),
                      "epochId": str(txn.get("version", ""))}
    return mode, {}


def _put_if_absent(target: Path, text: str) -> bool:
    """Create ``target`` with ``text`` only if it does not exist, all at once (a hard link of a finished
    temporary file: readers never see half a commit). False when it already exists."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
    temp.write_text(text, encoding="utf-8")
    try:
        os.link(temp, target)
    except FileExistsError:
        return False
    finally:
        temp.unlink(missing_ok=True)
    return True

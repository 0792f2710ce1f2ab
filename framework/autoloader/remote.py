"""Auto Loader on an object store (``s3a://``): the same Spark file stream source and record parsing as for a local
folder (``source.py``), with the listing, the schema store and ``cleanSource`` done through Hadoop's file system of
the session instead of the local one.

What differs from a local folder, and why: a local folder is listed, read and moved with Python's file functions
(milliseconds, no JVM call per file); an object store is reached only through Hadoop's ``s3a`` client. The
options that need the framework to compare the listing with the checkpoint's log before the stream starts
(``cloudFiles.allowOverwrites``, ``includeExistingFiles=false``, parquet/orc/avro/xml sources, which widen their
schema from the files still to read, partition columns inferred from ``key=value`` folders) are refused with a
message instead of being half supported. A JSON or CSV schema is inferred at the stream's first start, from the
files present then, and kept under the schema location as on a local disk; with ``addNewColumns`` (the default
without a user schema) a batch that meets a new column stops the stream, and its restart widens the stored schema
from that batch's files (read from the checkpoint's source log), as on a local disk.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from framework import internals
from framework.autoloader import records, schemas
from framework.autoloader.options import CloudFilesOptions
from framework.autoloader.paths import RemoteFile
from framework.autoloader.schema_store import STATE_FILE, StoredSchema
from framework.errors import AutoLoaderError
from framework.rescued import note_rescued_column
from framework.storage.url import ObjectStoreUrl


class HadoopFiles:
    """The few file operations Auto Loader needs, through Hadoop's file system for one URL's bucket."""

    def __init__(self, spark: SparkSession, url: str) -> None:
        self.jvm: Any = internals.jvm(spark)
        self.fs = self._path(url).getFileSystem(internals.hadoop_conf(spark))

    def _path(self, url: str) -> Any:
        return self.jvm.org.apache.hadoop.fs.Path(url)

    def files(self, root: str) -> list[RemoteFile]:
        """The visible files under ``root`` (recursively; Spark's hidden names skipped), oldest first."""
        found: list[RemoteFile] = []
        if not self.fs.exists(self._path(root)):
            return found
        listing = self.fs.listFiles(self._path(root), True)
        prefix = root.rstrip("/") + "/"
        while listing.hasNext():
            status = listing.next()
            url = str(status.getPath().toString())
            relative = url[len(prefix):] if url.startswith(prefix) else url.rsplit("/", 1)[-1]
            if any(part.startswith(("_", ".")) for part in relative.split("/")):
                continue
            found.append(RemoteFile(ObjectStoreUrl(url), int(status.getLen()), int(status.getModificationTime())))
        return sorted(found, key=lambda f: (f.mtime_ms, f.path.url))

    def names(self, folder: str) -> list[str]:
        """The names of the entries of ``folder`` (empty when it does not exist)."""
        path = self._path(folder)
        if not self.fs.exists(path):
            return []
        return [str(s.getPath().getName()) for s in self.fs.listStatus(path)]

    def read_text(self, url: str) -> str | None:
        """The file's text, or None when it does not exist."""
        path = self._path(url)
        if not self.fs.exists(path):
            return None
        stream = self.fs.open(path)
        try:
            return str(self.jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def write_text(self, url: str, text: str) -> None:
        """Write the file (an object appears whole when its upload completes)."""
        stream = self.fs.create(self._path(url), True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def mtime_s(self, url: str) -> float | None:
        """The file's modification time in epoch seconds, or None when it does not exist."""
        path = self._path(url)
        return self.fs.getFileStatus(path).getModificationTime() / 1000 if self.fs.exists(path) else None

    def move(self, source: str, target: str) -> bool:
        """Move a file (on S3: copy, then delete), creating the target's folder."""
        target_path = self._path(target)
        self.fs.mkdirs(target_path.getParent())
        return bool(self.fs.rename(self._path(source), target_path))

    def delete(self, url: str) -> bool:
        """Delete a file."""
        return bool(self.fs.delete(self._path(url), False))


class RemoteSchemaStore:
    """:class:`framework.autoloader.schema_store.SchemaStore`'s files (``_schemas/<version>``, the state file)
    on the object store."""

    def __init__(self, files: HadoopFiles, location: str) -> None:
        self.files = files
        self.root = location.rstrip("/")
        self.schemas = f"{self.root}/_schemas"

    def latest(self) -> StoredSchema | None:
        """The newest stored schema, or None before the first one."""
        versions = sorted(int(n) for n in self.files.names(self.schemas) if n.isdigit())
        if not versions:
            return None
        text = self.files.read_text(f"{self.schemas}/{versions[-1]}") or ""
        doc = json.loads(text.splitlines()[1])
        return StoredSchema(versions[-1], StructType.fromJson(doc["dataSchemaJson"]),
                            StructType.fromJson(doc["partitionSchemaJson"]))

    def write(self, data: StructType, partitions: StructType) -> StoredSchema:
        """Store the first version (a remote stream's schema is inferred once)."""
        doc = {"dataSchemaJson": data.jsonValue(), "partitionSchemaJson": partitions.jsonValue()}
        self.files.write_text(f"{self.schemas}/0", "v1\n" + json.dumps(doc) + "\n")
        self.files.write_text(f"{self.root}/{STATE_FILE}", "{}")
        return StoredSchema(0, data, partitions)


def refuse_unsupported(opts: CloudFilesOptions, path: str) -> None:
    """Raise for the options a source on an object store does not support (see the module's docstring)."""
    reasons = []
    if opts.allow_overwrites:
        reasons.append("cloudFiles.allowOverwrites")
    if not opts.include_existing_files:
        reasons.append("cloudFiles.includeExistingFiles=false")
    if opts.format not in ("json", "csv", "text", "binaryFile"):
        reasons.append(f"cloudFiles.format '{opts.format}'")
    if reasons:
        raise AutoLoaderError(f"cloudFiles source '{path}' is on an object store, where {', '.join(reasons)} "
                              "is not supported yet; land the files on a local or mounted folder, or drop the "
                              "option")


def remote_schema(spark: SparkSession, opts: CloudFilesOptions, files: HadoopFiles, path: str,
                  location: str, *, checkpoint: str | None = None, mode: str = "none") -> StoredSchema:
    """The stream's stored schema: inferred from the files present and stored at its first start; widened by
    ``addNewColumns`` with the new columns of the files of the batch that stopped the stream."""
    store = RemoteSchemaStore(files, location)
    stored = store.latest()
    if stored is not None:
        return _widened(spark, opts, files, store, stored, path, checkpoint) if mode == "addNewColumns" else stored
    data = schemas.infer_data_schema(spark, opts, files.files(path)[: schemas.SAMPLE_FILES])
    if not data.fields and opts.format not in ("text", "binaryFile") and not opts.schema_hints:
        raise AutoLoaderError(f"[CF_EMPTY_DIR_FOR_SCHEMA_INFERENCE] cannot infer the schema of cloudFiles.format "
                              f"'{opts.format}' from '{path}': no non-empty files there yet. Land at least one file, "
                              "or give the schema with .schema(...) or cloudFiles.schemaHints.")
    partitions = StructType([f for f in data.fields if opts.partition_columns and f.name in opts.partition_columns])
    return store.write(data, partitions)


def _widened(spark: SparkSession, opts: CloudFilesOptions, files: HadoopFiles, store: RemoteSchemaStore,
             stored: StoredSchema, path: str, checkpoint: str | None) -> StoredSchema:
    """``stored`` with the new columns of the files of planned, uncommitted batches (where a new column stopped
    the stream), written as the next version; ``stored`` itself when there are none."""
    if checkpoint is None:
        return stored
    pending = {url for url, _ms, _batch in logged_files(files, checkpoint, path, committed=False)}
    if not pending:
        return stored
    sample = [f for f in files.files(path) if f.path.url in pending][: schemas.SAMPLE_FILES]
    widened, added = schemas.widen(stored.data, schemas.infer_data_schema(spark, opts, sample),
                                   [f.name for f in stored.partitions.fields])
    return store.write(widened, stored.partitions) if added else stored


def logged_files(files: HadoopFiles, checkpoint: str, root: str, *, committed: bool
                 ) -> Iterator[tuple[str, int, int]]:
    """(url, logged modification time in ms, batch id) of every file under ``root`` in the checkpoint's file
    source logs (Spark's ``sources/<i>/<batch>[.compact]``) whose batch is committed (``commits/<batch>``), or,
    with ``committed=False``, planned and not committed."""
    done = {int(n) for n in files.names(f"{checkpoint}/commits") if n.isdigit()}
    prefix = root.rstrip("/") + "/"
    for source in files.names(f"{checkpoint}/sources"):
        folder = f"{checkpoint}/sources/{source}"
        for name in files.names(folder):
            if not name.split(".")[0].isdigit() or name.startswith("."):
                continue
            for line in (files.read_text(f"{folder}/{name}") or "").splitlines()[1:]:
                if not line.strip():
                    continue
                entry = json.loads(line)
                batch = int(entry.get("batchId", name.split(".")[0]))
                if (batch in done) is committed and str(entry["path"]).startswith(prefix):
                    yield str(entry["path"]), int(entry.get("timestamp", 0)), batch


def clean_remote(spark: SparkSession, opts: CloudFilesOptions, root: str, checkpoint: str,
                 now_s: float | None = None) -> list[str]:
    """``cleanSource`` MOVE/DELETE of the files of committed batches older than the retention, on the object
    store (see ``clean.py`` for the rules, which are the same). Returns the files moved or deleted."""
    if opts.clean_source == "OFF":
        return []
    files = HadoopFiles(spark, root)
    now_s = time.time() if now_s is None else now_s
    dest = opts.move_destination.rstrip("/") if opts.clean_source == "MOVE" and opts.move_destination else None
    if dest is not None and (dest + "/").startswith(root.rstrip("/") + "/"):
        raise AutoLoaderError(f"cloudFiles.cleanSource.moveDestination '{dest}' is inside the source folder "
                              f"'{root}': archived files would be ingested again. Choose a folder outside it.")
    cleaned: list[str] = []
    commit_times: dict[int, float | None] = {}
    for url, logged_ms, batch in logged_files(files, checkpoint, root, committed=True):
        if batch not in commit_times:
            commit_times[batch] = files.mtime_s(f"{checkpoint}/commits/{batch}")
        committed_at = commit_times[batch]
        mtime = files.mtime_s(url)
        if committed_at is None or committed_at + opts.retention_s > now_s or mtime is None:
            continue
        if int(mtime * 1000) > logged_ms:
            continue  # rewritten after ingestion: not the data we committed
        relative = url[len(root.rstrip("/")) + 1:]
        done = files.move(url, f"{dest}/{relative}") if dest is not None else files.delete(url)
        if done:
            cleaned.append(url)
    return cleaned


def load_remote(spark: SparkSession, opts: CloudFilesOptions, path: str, user_schema: StructType | None,
                schema_location: str, checkpoint: str | None, build: Callable[..., DataFrame]) -> DataFrame:
    """The ``cloudFiles`` stream of a folder on an object store; ``build`` is ``source._build`` (the record
    parsing shared with local folders)."""
    refuse_unsupported(opts, path)
    files = HadoopFiles(spark, path)
    if checkpoint is not None:
        clean_remote(spark, opts, path, checkpoint)
    mode = opts.evolution_mode or ("none" if user_schema is not None else "addNewColumns")
    if user_schema is not None:
        data, partitions = user_schema, StructType([])
        rescued = opts.rescued_data_column
    else:
        stored = remote_schema(spark, opts, files, path, opts.schema_location or schema_location,
                               checkpoint=checkpoint, mode=mode)
        data, partitions = stored.data, stored.partitions
        if opts.schema_hints:
            data = schemas.apply_hints(data, schemas.parse_ddl(spark, opts.schema_hints, "cloudFiles.schemaHints"))
        rescued = opts.rescued_data_column or "_rescued_data"
    if opts.format not in ("json", "csv"):
        rescued = None
    if rescued is not None:
        data = StructType([f for f in data.fields if f.name != rescued])
    guard = mode if mode in ("addNewColumns", "failOnNewColumns") and opts.format in ("json", "csv") else None
    plan = records.Plan(data=data, partitions=partitions, rescued_column=rescued, guard=guard,
                        case_sensitive=opts.reader_case_sensitive)
    note_rescued_column(rescued)
    return build(spark, opts, path, plan, [], None, StructType([]))

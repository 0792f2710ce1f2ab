"""``load_cloud_files``: Auto Loader on Spark's built-in file stream source.

The file source does the bookkeeping (exactly-once file tracking in the checkpoint, batch bounds, ``_metadata``);
this module adds Auto Loader's schema handling (inference, hints, versions under the schema location, evolution
modes), rescued data in Spark expressions, time filters, ``includeExistingFiles`` and ``cleanSource``.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StringType, StructField, StructType

from framework.autoloader import checkpoint as ckpt
from framework.autoloader import records, schemas
from framework.autoloader.clean import check_destination, clean_committed
from framework.autoloader.options import DEFAULT_MAX_FILES_PER_TRIGGER, CloudFilesOptions, parse_options
from framework.autoloader.paths import ListedFile, list_files, to_local
from framework.autoloader.schema_store import SchemaStore, StoredSchema
from framework.errors import AutoLoaderError, UnknownFieldError
from framework.internals import lookup_data_source
from framework.rescued import note_rescued_column
from framework.storage.url import is_local

log = logging.getLogger(__name__)
RESCUED_DEFAULT = "_rescued_data"
NO_MAX_FILE_AGE = "3650000d"  # Auto Loader has no age limit; Spark's file source defaults to 7 days
TEXT_PARSED = ("json", "csv")
NATIVE_TYPED = ("parquet", "orc", "avro", "xml")
RESCUE_FORMATS = ("json", "csv", "xml", "parquet", "orc", "avro")


def load_cloud_files(spark: SparkSession, path: str, options: dict[str, str], schema: StructType | str | None = None,
                     *, default_schema_location: str, checkpoint_location: str | None = None) -> DataFrame:
    """Return a streaming DataFrame with Auto Loader (``cloudFiles``) semantics.

    Args:
        spark: the active session.
        path: the folder (or glob-free file path) to ingest, local (``/x`` or ``file:/x``).
        options: every ``.option(...)`` given to ``readStream.format("cloudFiles")``, including
            ``cloudFiles.format``.
        schema: the user schema (StructType or DDL string), or None to infer it.
        default_schema_location: where the inferred schema and its versions are kept when the options have no
            ``cloudFiles.schemaLocation``.
        checkpoint_location: the flow's checkpoint folder; needed for ``cleanSource``, for ``includeExistingFiles``
            and for ``addNewColumns`` to widen the schema from the failed batch's files.

    Returns:
        A streaming DataFrame: the data columns, partition columns, then the rescued data column (when enabled).

    Raises:
        AutoLoaderError: bad options, unsupported format, no files to infer a schema from.
        UnknownFieldError: a schema-bearing file (parquet, orc, xml) brought new columns: with addNewColumns the
            stored schema has been widened and the next call continues; with failOnNewColumns nothing changed.
    """
    user_schema = _user_schema(spark, schema)
    opts = parse_options(options, user_schema=user_schema is not None)
    _check_format_available(spark, opts.format)
    if not is_local(path):  # s3a://...: listing, schemas and cleanSource through Hadoop (remote.py)
        return _remote(spark, opts, path, user_schema, default_schema_location, checkpoint_location)
    root = to_local(path)
    checkpoint = to_local(checkpoint_location) if checkpoint_location else None
    _before_listing(opts, root, checkpoint)
    store = SchemaStore(opts.schema_location or default_schema_location)
    mode = opts.evolution_mode or ("none" if user_schema is not None else "addNewColumns")
    listed = list_files(root, opts.path_glob_filter) if root.exists() else []  # once per call, oldest first
    sample = listed[: schemas.SAMPLE_FILES]
    if user_schema is not None:
        data, partitions = _split_user_schema(opts, user_schema, root, sample)
        rescued = opts.rescued_data_column
    else:
        data, partitions = _inferred_columns(spark, opts, _stored_schema(spark, opts, store, root, listed,
                                                                         checkpoint, mode))
        rescued = opts.rescued_data_column or RESCUED_DEFAULT
    if opts.format not in RESCUE_FORMATS:
        rescued = None
    if rescued is not None and rescued in {f.name for f in data.fields}:
        data = StructType([f for f in data.fields if f.name != rescued])

    note_rescued_column(rescued)  # counted under its own name (framework/rescued.py)
    plan = records.Plan(data=data, partitions=partitions, rescued_column=rescued,
                        guard=mode if mode in ("addNewColumns", "failOnNewColumns") else None,
                        case_sensitive=opts.reader_case_sensitive)
    cutoff = _existing_files_cutoff(opts, store, listed, checkpoint)
    extras = (_extra_columns(spark, opts, root, listed, checkpoint, StructType(data.fields + partitions.fields))
              if opts.format in NATIVE_TYPED and rescued is not None and plan.guard is None else StructType([]))
    try:
        return _build(spark, opts, root, plan, sample, cutoff, extras)
    except AutoLoaderError as exc:
        if type(exc) is not AutoLoaderError:
            raise
        raise AutoLoaderError(f"cloudFiles source '{root}': {exc.message}") from None


def _remote(spark: SparkSession, opts: CloudFilesOptions, path: str, user_schema: StructType | None,
            schema_location: str, checkpoint: str | None) -> DataFrame:
    from framework.autoloader.remote import load_remote

    return load_remote(spark, opts, path, user_schema, schema_location, checkpoint, _build)


def _before_listing(opts: CloudFilesOptions, root: Path, checkpoint: Path | None) -> None:
    """Check the cleanSource destination; forget rewritten files (allowOverwrites); clean committed files."""
    check_destination(opts, root)
    if opts.allow_overwrites:
        if checkpoint is None:
            raise AutoLoaderError("cloudFiles.allowOverwrites=true needs the flow's checkpoint location to find "
                                  "files changed since they were ingested; run the table through the pipeline "
                                  "runner (or pass checkpoint_location)")
        again = ckpt.forget_rewritten(checkpoint, root)
        if again:
            log.info("cloudFiles.allowOverwrites: %d changed file(s) under %s will be ingested again: %s",
                     len(again), root, ", ".join(p.name for p in again[:5]) + (" ..." if len(again) > 5 else ""))
    if checkpoint is not None and opts.clean_source != "OFF":
        clean_committed(opts, root, checkpoint)


def _split_user_schema(opts: CloudFilesOptions, user_schema: StructType, root: Path,
                       sample: list[ListedFile]) -> tuple[StructType, StructType]:
    """The user schema as (data columns, partition columns)."""
    partition_names = (set(opts.partition_columns) if opts.partition_columns is not None
                       else set() if opts.recursive_file_lookup
                       else {f.name for f in schemas.infer_partitions(root, sample).fields})
    return (StructType([f for f in user_schema.fields if f.name not in partition_names]),
            StructType([f for f in user_schema.fields if f.name in partition_names]))


def _inferred_columns(spark: SparkSession, opts: CloudFilesOptions,
                      stored: StoredSchema) -> tuple[StructType, StructType]:
    """The stored (inferred) schema with ``cloudFiles.schemaHints`` applied: (data columns, partition columns)."""
    data, partitions = stored.data, stored.partitions
    if not opts.schema_hints:
        return data, partitions
    hints = schemas.parse_ddl(spark, opts.schema_hints, "cloudFiles.schemaHints")
    part_hints = StructType([h for h in hints.fields if h.name.lower() in
                             {p.name.lower() for p in partitions.fields}])
    data = schemas.apply_hints(data, StructType([h for h in hints.fields if h not in part_hints.fields]))
    return data, schemas.apply_hints(partitions, part_hints)


def _user_schema(spark: SparkSession, schema: StructType | str | None) -> StructType | None:
    if schema is None or isinstance(schema, StructType):
        return schema
    return schemas.parse_ddl(spark, schema, "schema")


def _check_format_available(spark: SparkSession, fmt: str) -> None:
    if fmt != "avro":
        return
    try:
        lookup_data_source(spark, "avro")
    except Exception:
        raise AutoLoaderError("cloudFiles.format 'avro' is not supported locally: the spark-avro package is not "
                              "on the classpath (pyspark ships without it). Add org.apache.spark:spark-avro_2.13 "
                              "to the local Spark jars, or convert the files to parquet/json.") from None


def _stored_schema(spark: SparkSession, opts: CloudFilesOptions, store: SchemaStore, root: Path,
                   listed: list[ListedFile], checkpoint: Path | None, mode: str) -> StoredSchema:
    sample = listed[: schemas.SAMPLE_FILES]
    stored = store.latest()
    if stored is None:
        data = schemas.infer_data_schema(spark, opts, sample)
        if not data.fields and opts.format not in ("text", "binaryFile") and not opts.schema_hints:
            raise AutoLoaderError(
                f"[CF_EMPTY_DIR_FOR_SCHEMA_INFERENCE] cannot infer the schema of cloudFiles.format "
                f"'{opts.format}' from '{root}': no non-empty files there yet. Land at least one file, or give "
                "the schema with .schema(...) or cloudFiles.schemaHints.")
        if opts.schema_hints:
            data = schemas.apply_hints(data, schemas.parse_ddl(spark, opts.schema_hints, "cloudFiles.schemaHints"))
        partitions = _partition_schema(opts, root, sample)
        data = StructType([f for f in data.fields if f.name.lower() not in
                           {p.name.lower() for p in partitions.fields}])
        stored = store.write(data, partitions)
        log.info("cloudFiles: inferred schema v%d for %s: %s", stored.version, root, data.simpleString())
        return stored
    if mode not in ("addNewColumns", "failOnNewColumns"):
        return stored
    if opts.format in TEXT_PARSED:
        if mode != "addNewColumns":
            return stored
        pending = _pending_files(store, root, checkpoint, listed)
        if not pending:
            return stored
        widened, added = schemas.widen(stored.data, schemas.infer_data_schema(spark, opts, pending),
                                       [f.name for f in stored.partitions.fields])
        if added:
            stored = store.write(widened, stored.partitions)
            log.info("cloudFiles: schema v%d adds %s", stored.version, ", ".join(added))
        return stored
    if opts.format in NATIVE_TYPED:
        unseen = _unseen_files(root, listed, checkpoint)
        if not unseen:
            return stored
        widened, added = schemas.widen(stored.data, schemas.infer_data_schema(spark, opts, unseen, every_file=True),
                                       [f.name for f in stored.partitions.fields])
        if added:
            where = f"Files under '{root}'"
            if mode == "addNewColumns":
                stored = store.write(widened, stored.partitions)
                raise UnknownFieldError(added, retryable=True, where=where, fix=(
                    f"The schema at '{store.root}' was widened to version {stored.version}; restart the flow to "
                    "continue with the new columns"))
            raise UnknownFieldError(added, retryable=False, where=where)
    return stored


def _unseen_files(root: Path, listed: list[ListedFile], checkpoint: Path | None) -> list[ListedFile]:
    """The non-empty listed files that no committed batch ingested."""
    done = {f.path for f in ckpt.committed_files(checkpoint, root)} if checkpoint is not None else set()
    return [f for f in listed if f.path not in done and f.size > 0]


def _extra_columns(spark: SparkSession, opts: CloudFilesOptions, root: Path, listed: list[ListedFile],
                   checkpoint: Path | None, known: StructType) -> StructType:
    """Columns of the files still to ingest that the schema lacks (case-insensitively): for a schema-bearing
    format in rescue/none mode they are read too and go to the rescued data column, not dropped."""
    unseen = _unseen_files(root, listed, checkpoint)
    if not unseen:
        return StructType([])
    names = {f.name.lower() for f in known.fields}
    found = schemas.infer_data_schema(spark, opts, unseen, every_file=True)
    return StructType([f for f in found.fields if f.name.lower() not in names])


def _pending_files(store: SchemaStore, root: Path, checkpoint: Path | None,
                   listed: list[ListedFile]) -> list[ListedFile]:
    """Files whose batch failed (planned, not committed): where a new column stopped the stream."""
    if checkpoint is not None:
        out = []
        for entry in ckpt.uncommitted_files(checkpoint, root):
            try:
                st = entry.path.stat()
            except FileNotFoundError:
                continue
            out.append(ListedFile(entry.path, st.st_size, int(st.st_mtime * 1000)))
        return out
    versions = store.versions()
    written_ms = int((store.schemas / str(versions[-1])).stat().st_mtime * 1000) if versions else 0
    return [f for f in listed if f.mtime_ms >= written_ms][: schemas.SAMPLE_FILES]


def _partition_schema(opts: CloudFilesOptions, root: Path, sample: list[ListedFile]) -> StructType:
    if opts.partition_columns is not None:
        return StructType([StructField(n, StringType(), True) for n in opts.partition_columns])
    if opts.recursive_file_lookup:
        return StructType([])
    return schemas.infer_partitions(root, sample)


def _existing_files_cutoff(opts: CloudFilesOptions, store: SchemaStore, listed: list[ListedFile],
                           checkpoint: Path | None) -> int | None:
    """includeExistingFiles=false: the newest modification time (ms) present at the stream's first start."""
    if opts.include_existing_files:
        return None
    state = store.state()
    first_start = not ckpt.has_started(checkpoint) if checkpoint is not None else "existingFilesCutoffMs" not in state
    if first_start:
        cutoff = max((f.mtime_ms for f in listed), default=0)
        store.update_state(existingFilesCutoffMs=cutoff)
        return cutoff
    value = state.get("existingFilesCutoffMs")
    return int(value) if value is not None else None


def _timestamp(value: datetime | int) -> Column:
    if isinstance(value, int):
        return F.timestamp_millis(F.lit(value))
    return F.lit(value.astimezone(UTC).replace(tzinfo=None)).cast("timestamp_ntz").cast("timestamp")


def _source(spark: SparkSession, opts: CloudFilesOptions, root: Path | str, fmt: str, schema: StructType,
            extra: dict[str, str], cutoff: int | None) -> DataFrame:
    reader = spark.readStream.format(fmt).schema(schema)
    reader = reader.option("recursiveFileLookup", "true").option("maxFileAge", opts.max_file_age or NO_MAX_FILE_AGE)
    if opts.max_bytes_per_trigger is not None:
        reader = reader.option("maxBytesPerTrigger", str(opts.max_bytes_per_trigger))
    else:
        reader = reader.option("maxFilesPerTrigger",
                               str(opts.max_files_per_trigger or DEFAULT_MAX_FILES_PER_TRIGGER))
    if opts.path_glob_filter:
        reader = reader.option("pathGlobFilter", opts.path_glob_filter)
    reader = reader.option("ignoreMissingFiles", str(opts.ignore_missing_files).lower())
    reader = reader.option("ignoreCorruptFiles", str(opts.ignore_corrupt_files).lower())
    for key, value in extra.items():
        reader = reader.option(key, value)
    df = reader.load(str(root))
    mtime = F.col("_metadata.file_modification_time")
    if cutoff is not None:
        df = df.where(mtime > _timestamp(cutoff))
    if opts.modified_after is not None:
        df = df.where(mtime > _timestamp(opts.modified_after))
    if opts.modified_before is not None:
        df = df.where(mtime < _timestamp(opts.modified_before))
    return df


def _text_options(opts: CloudFilesOptions, whole: bool) -> dict[str, str]:
    enc = opts.option("encoding") or opts.option("charset")
    if enc and enc.replace("-", "").lower() != "utf8":
        raise AutoLoaderError(f"option 'encoding' = '{enc}' is not supported locally for cloudFiles.format "
                              f"'{opts.format}': only UTF-8 files are read; convert the files or remove the option")
    out = {"wholetext": "true"} if whole else {}
    sep = opts.option("lineSep")
    if sep and not whole:
        out["lineSep"] = sep
    return out


def _build(spark: SparkSession, opts: CloudFilesOptions, root: Path | str, plan: records.Plan,
           sample: list[ListedFile], cutoff: int | None, extras: StructType) -> DataFrame:
    fmt = opts.format
    if fmt == "json":
        source = _source(spark, opts, root, "text", schemas.TEXT_SCHEMA, _text_options(opts, opts.multi_line),
                         cutoff)
        return records.json_records(source, opts, plan)
    if fmt == "csv":
        if opts.multi_line:
            raise AutoLoaderError("option 'multiLine' is not supported locally for cloudFiles.format 'csv' "
                                  "(quoted values spanning lines): remove it; each line is read as one record "
                                  "and a line with an open quote is kept whole in the rescued data column")
        header = (opts.option("header", "false") or "false").lower() == "true"
        sep = opts.option("sep") or opts.option("delimiter") or ","
        width = records.csv_width(plan, max((_header_width(f.path, sep) for f in sample[:50]), default=0)
                                  if header else 0)
        whole = records.csv_reads_whole_files(spark, header)
        source = _source(spark, opts, root, "text", schemas.TEXT_SCHEMA, _text_options(opts, whole), cutoff)
        return records.csv_records(source, opts, plan, header=header, width=width)
    if fmt in ("text", "binaryFile"):
        extra = {k: v for k, v in opts.reader_options.items()} if fmt == "text" else {}
        schema = schemas.TEXT_SCHEMA if fmt == "text" else schemas.BINARY_FILE_SCHEMA
        source = _source(spark, opts, root, fmt, schema, extra, cutoff)
        source = source.select("*", F.col("_metadata.file_path").alias(records.PATH))
        return source.select(*[F.col(f.name) for f in schema.fields], *records.partition_values(plan))
    # parquet, orc, xml (avro when its jar is present): Spark's own reader with the stored schema, plus the
    # columns the files bring that the schema lacks (rescue/none mode: they go to the rescued data column)
    read_schema = StructType(plan.data.fields + extras.fields)
    extra = dict(opts.reader_options)
    corrupt = None
    if fmt == "xml" and plan.rescued_column:
        corrupt = "__cf_corrupt_record"
        read_schema = StructType([*read_schema.fields, StructField(corrupt, StringType(), True)])
        extra["columnNameOfCorruptRecord"] = corrupt
    source = _source(spark, opts, root, fmt, read_schema, extra, cutoff)
    source = source.select("*", F.col("_metadata.file_path").alias(records.PATH))
    out = [F.col(f"`{f.name}`") for f in plan.data.fields] + records.partition_values(plan)
    if plan.rescued_column:
        rescued: Column = F.lit(None).cast("string")
        if extras.fields:
            values = F.map_filter(F.create_map(*[x for f in extras.fields for x in (F.lit(f.name), _as_text(f))]),
                                  lambda _k, v: v.isNotNull())
            rescued = F.when(F.size(values) > 0, F.to_json(F.map_concat(values, F.create_map(
                F.lit(records.FILE_PATH_KEY), F.col(records.PATH)))))
        if corrupt:
            rescued = F.when(F.col(corrupt).isNotNull(), F.to_json(F.create_map(
                F.lit(records.CORRUPT_KEY), F.col(corrupt), F.lit(records.FILE_PATH_KEY),
                F.col(records.PATH)))).otherwise(rescued)
        out.append(rescued.alias(plan.rescued_column))
    return source.select(*out)


def _as_text(field: StructField) -> Column:
    """A value as the rescued data column writes it: strings as they are, nested values as JSON."""
    col = F.col(f"`{field.name}`")
    if isinstance(field.dataType, StringType):
        return col
    if isinstance(field.dataType, (StructType, ArrayType, MapType)):
        return F.to_json(col)
    return col.cast("string")


def _header_width(path: Path, sep: str) -> int:
    try:
        with path.open("rb") as fh:
            line = fh.readline().decode("utf-8", errors="replace")
    except OSError:
        return 0
    return line.count(sep) + 1

"""Schema helpers: inference on sample files, schema hints, merging for addNewColumns, partition folders."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from framework.autoloader.options import CloudFilesOptions
from framework.autoloader.paths import ListedFile, RemoteFile
from framework.errors import AutoLoaderError

SAMPLE_FILES = 1000
CORRUPT_COLUMN = "_corrupt_record"
BINARY_FILE_SCHEMA = StructType([
    StructField("path", StringType(), False), StructField("modificationTime", TimestampType(), False),
    StructField("length", LongType(), False), StructField("content", BinaryType(), True)])
TEXT_SCHEMA = StructType([StructField("value", StringType(), True)])
_PARTITION_DIR = re.compile(r"^([^=/]+)=([^/]*)$")


def parse_ddl(spark: SparkSession, ddl: str, what: str) -> StructType:
    """Parse a DDL column list (``"id bigint, ts timestamp"``) into a StructType."""
    try:
        parsed = spark.createDataFrame([], ddl).schema
    except Exception as exc:
        raise AutoLoaderError(f"{what} '{ddl}' is not a valid DDL column list such as 'id bigint, ts timestamp': "
                              f"{str(exc).splitlines()[0]}") from None
    return parsed


def dedupe_case(schema: StructType) -> StructType:
    """One column per case-insensitive name (the lower-case spelling if present, else the first); values under the
    other spellings end up in the rescued column."""
    chosen: dict[str, StructField] = {}
    for f in schema.fields:
        key = f.name.lower()
        if key not in chosen or (f.name == key and chosen[key].name != key):
            chosen[key] = f
    return StructType([f for f in schema.fields if chosen[f.name.lower()] is f])


def all_strings(schema: StructType) -> StructType:
    """The schema with every top-level column typed as a nullable string (JSON and CSV without
    ``cloudFiles.inferColumnTypes``)."""
    return StructType([StructField(f.name, StringType(), True) for f in schema.fields])


def apply_hints(schema: StructType, hints: StructType) -> StructType:
    """Hinted columns take the hint's type; hinted columns not in the schema are appended."""
    fields = list(schema.fields)
    index = {f.name.lower(): i for i, f in enumerate(fields)}
    for hint in hints.fields:
        i = index.get(hint.name.lower())
        if i is None:
            index[hint.name.lower()] = len(fields)
            fields.append(StructField(hint.name, hint.dataType, True))
        else:
            fields[i] = StructField(fields[i].name, hint.dataType, True)
    return StructType(fields)


def has_struct(dt: DataType) -> bool:
    """Whether a type holds a struct somewhere (itself, an array's elements, a map's values)."""
    if isinstance(dt, StructType):
        return True
    if isinstance(dt, ArrayType):
        return has_struct(dt.elementType)
    if isinstance(dt, MapType):
        return has_struct(dt.valueType)
    return False


def nested_paths(schema: StructType) -> list[str]:
    """Dotted paths of the fields inside struct columns (``s.x``; through arrays: ``items.y``); map values are
    not enumerable and are left out."""
    out: list[str] = []

    def walk(dt: DataType, prefix: str) -> None:
        if isinstance(dt, StructType):
            for f in dt.fields:
                out.append(f"{prefix}.{f.name}")
                walk(f.dataType, f"{prefix}.{f.name}")
        elif isinstance(dt, ArrayType):
            walk(dt.elementType, prefix)

    for f in schema.fields:
        walk(f.dataType, f.name)
    return out


def widen(current: StructType, candidate: StructType, also_known: Sequence[str] = ()) -> tuple[StructType, list[str]]:
    """``current`` with the columns of ``candidate`` it lacks and, inside struct columns (also in arrays and map
    values), the nested fields it lacks (case-insensitive names; existing types are kept, as addNewColumns does).

    Returns:
        The widened schema and the dotted names of what was added (empty when nothing was).
    """
    added: list[str] = []

    def merge(cur: DataType, cand: DataType, path: str) -> DataType:
        if isinstance(cur, StructType) and isinstance(cand, StructType):
            by_name = {f.name.lower(): f for f in cand.fields}
            fields = []
            for f in cur.fields:
                other = by_name.get(f.name.lower())
                dt = merge(f.dataType, other.dataType, f"{path}{f.name}.") if other is not None else f.dataType
                fields.append(StructField(f.name, dt, f.nullable, f.metadata))
            known = {f.name.lower() for f in cur.fields}
            for f in cand.fields:
                if f.name.lower() not in known and f.name != CORRUPT_COLUMN:
                    known.add(f.name.lower())
                    added.append(path + f.name)
                    fields.append(StructField(f.name, f.dataType, True))
            return StructType(fields)
        if isinstance(cur, ArrayType) and isinstance(cand, ArrayType):
            return ArrayType(merge(cur.elementType, cand.elementType, path), cur.containsNull)
        if isinstance(cur, MapType) and isinstance(cand, MapType):
            return MapType(cur.keyType, merge(cur.valueType, cand.valueType, path), cur.valueContainsNull)
        return cur

    skip = {n.lower() for n in also_known}
    cand = StructType([f for f in candidate.fields if f.name.lower() not in skip])
    widened = merge(current, cand, "")
    assert isinstance(widened, StructType)
    return widened, added


def merge_by_name(schemas: Sequence[StructType]) -> StructType:
    """Union of columns in first-seen order; a column seen with different types becomes a string."""
    fields: dict[str, StructField] = {}
    for schema in schemas:
        for f in schema.fields:
            key = f.name.lower()
            if key not in fields:
                fields[key] = StructField(f.name, f.dataType, True)
            elif fields[key].dataType != f.dataType:
                fields[key] = StructField(fields[key].name, StringType(), True)
    return StructType(list(fields.values()))


def infer_partitions(root: Path, files: Sequence[ListedFile]) -> StructType:
    """Partition columns from ``key=value`` folders between ``root`` and the files (string typed)."""
    names: list[str] = []
    for f in files:
        try:
            parts = f.path.parent.relative_to(root).parts
        except ValueError:
            continue
        for part in parts:
            m = _PARTITION_DIR.match(part)
            if m and m.group(1) not in names:
                names.append(m.group(1))
    return StructType([StructField(n, StringType(), True) for n in names])


def _first_line(path: Path) -> str:
    with path.open("rb") as fh:
        return fh.readline().decode("utf-8", errors="replace").rstrip("\r\n")


def infer_data_schema(spark: SparkSession, opts: CloudFilesOptions, files: Sequence[ListedFile | RemoteFile],
                      *, every_file: bool = False) -> StructType:
    """Infer the data schema from sample files as Auto Loader does (strings unless inferColumnTypes).

    ``every_file`` reads every file given instead of a sample (for formats that keep their schema in the file,
    where only the footers are read): to find every column a batch will meet.
    """
    paths: list[str] = []
    budget = opts.sample_bytes
    for f in files:
        if not every_file and (len(paths) >= opts.sample_files or budget <= 0):
            break
        if f.size > 0:
            paths.append(str(f.path))
            budget -= f.size
    fmt = opts.format
    if fmt == "text":
        return TEXT_SCHEMA
    if fmt == "binaryFile":
        return BINARY_FILE_SCHEMA
    if not paths:
        return StructType([])
    try:
        return _infer(spark, opts, paths)
    except CapturedException as exc:  # a bad reader option or an unreadable file: name the files and the option
        first = (str(exc).strip().splitlines() or ["?"])[0].rstrip(".")
        raise AutoLoaderError(f"schema inference for cloudFiles.format '{fmt}' failed on {len(paths)} file(s) "
                              f"(first: {paths[0]}): {first}. Fix the source's .option(...) values or the "
                              "file") from None


def _infer(spark: SparkSession, opts: CloudFilesOptions, paths: list[str]) -> StructType:
    fmt = opts.format
    # a separate session (same SparkContext) so that "id" and "ID" can both be inferred, then deduplicated
    session = spark.newSession()
    session.conf.set("spark.sql.caseSensitive", "true")
    reader = session.read.options(**_inference_options(opts))
    if fmt == "json":
        schema = reader.option("multiLine", str(opts.multi_line).lower()).json(paths).schema
    elif fmt == "csv":
        header = (opts.option("header", "false") or "false").lower() == "true"
        if not header:
            schema = reader.option("inferSchema", str(opts.infer_column_types).lower()).csv(paths).schema
        else:
            groups: dict[str, list[str]] = {}
            for p in paths:
                first = _first_line(Path(p))
                if first.strip():  # a blank (or whitespace-only) file has no header and no records
                    groups.setdefault(first, []).append(p)
            schema = merge_by_name([
                reader.option("header", "true").option("inferSchema", str(opts.infer_column_types).lower())
                .csv(group).schema for group in groups.values()]) if groups else StructType([])
    elif fmt == "xml":
        schema = reader.option("inferSchema", str(opts.infer_column_types).lower()).format("xml").load(paths).schema
    else:  # parquet, orc, avro: the schema is in the files
        schema = reader.option("mergeSchema", "true").format(fmt).load(paths).schema
    schema = StructType([f for f in schema.fields if f.name != CORRUPT_COLUMN])
    if fmt in ("json", "csv") and not opts.infer_column_types:
        schema = all_strings(schema)
    return dedupe_case(schema)


def _inference_options(opts: CloudFilesOptions) -> dict[str, str]:
    skip = {"header", "inferschema", "multiline", "mergeschema", "wholetext", "mode"}
    return {k: v for k, v in opts.reader_options.items() if k.lower() not in skip}


def is_string(dt: DataType) -> bool:
    """Whether ``dt`` is Spark's string type."""
    return isinstance(dt, StringType)

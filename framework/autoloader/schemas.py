"""Schema helpers: inference on sample files, schema hints, merging for addNewColumns, partition folders."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.types import (
    BinaryType,
    DataType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from framework.autoloader.options import CloudFilesOptions
from framework.autoloader.paths import ListedFile
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


def new_fields(current: StructType, candidate: StructType) -> list[StructField]:
    """Columns of ``candidate`` absent from ``current`` (case-insensitively)."""
    known = {f.name.lower() for f in current.fields}
    out = []
    for f in candidate.fields:
        if f.name.lower() not in known and f.name != CORRUPT_COLUMN:
            known.add(f.name.lower())
            out.append(StructField(f.name, f.dataType, True))
    return out


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


def infer_data_schema(spark: SparkSession, opts: CloudFilesOptions, files: Sequence[ListedFile]) -> StructType:
    """Infer the data schema from sample files as Auto Loader does (strings unless inferColumnTypes)."""
    paths: list[str] = []
    budget = opts.sample_bytes
    for f in files:
        if len(paths) >= opts.sample_files or budget <= 0:
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
                groups.setdefault(_first_line(Path(p)), []).append(p)
            schema = merge_by_name([
                reader.option("header", "true").option("inferSchema", str(opts.infer_column_types).lower())
                .csv(group).schema for group in groups.values()])
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
    return isinstance(dt, StringType)

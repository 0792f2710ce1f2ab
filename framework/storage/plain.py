"""Small Delta tables read straight from their live Parquet files, and the columns the driver writes as Spark does.

A query over a small Delta table pays Delta's state reconstruction for each new version the table gained: 0.3-0.5
s of small Spark jobs on two cores, more than the query itself. :func:`pinned_parquet` reads the table instead as
the Parquet files live in its log, replayed on the driver (``framework.storage.log``). Only tables whose files hold
their rows as they are qualify: no partition columns, no column mapping, and no reader feature other than deletion
vectors, with no live file carrying one. The list is the table's as of the call: build the query and run it at once.

:func:`arrow_writable` tells which schemas ``framework.storage.driver`` writes exactly as Spark would.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import unquote, urlsplit

from framework.internals import optimized_plan, schema_default_size

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType

PLAIN_READER_FEATURES = frozenset({"deletionVectors"})  # harmless to a plain Parquet read while no file has one


class PlainTable(NamedTuple):
    """A table a plain Parquet read of its live files returns: its version, ``protocol`` and ``metaData``
    actions, and its live files (``add`` actions by path)."""

    version: int
    protocol: dict[str, Any]
    metadata: dict[str, Any]
    files: dict[str, dict[str, Any]]


def file_path(table: str, name: str) -> str:
    """Where an ``add`` action's file is: its path is relative to the table (URL-encoded) or an absolute URI."""
    return name if urlsplit(name).scheme or name.startswith("/") else f"{table.rstrip('/')}/{unquote(name)}"


def plain_files(path: str, max_bytes: int) -> PlainTable | None:
    """The table (see :class:`PlainTable`) when a plain Parquet read of its live files returns its rows (see
    above) and they add up to at most ``max_bytes``; None otherwise."""
    from framework.storage.log import live_files, protocol_and_metadata

    found = protocol_and_metadata(path) if max_bytes > 0 else None
    if found is None:
        return None
    version, protocol, metadata = found
    if protocol is None or metadata is None or metadata.get("partitionColumns") or \
            (metadata.get("configuration") or {}).get("delta.columnMapping.mode", "none") != "none":
        return None
    reader = int(protocol.get("minReaderVersion", 1))
    if reader not in (1, 3) or not set(protocol.get("readerFeatures") or []) <= PLAIN_READER_FEATURES:
        return None
    files = live_files(path)
    if files is None or sum(int(f.get("size") or 0) for f in files.values()) > max_bytes \
            or any(f.get("deletionVector") for f in files.values()):
        return None
    return PlainTable(version, protocol, metadata, files)


def pinned_parquet(spark: SparkSession, path: str, max_bytes: int, *, same_schema: bool = False) -> DataFrame | None:
    """The Delta table at ``path`` as a Parquet read of the files live now, when it qualifies (see above) and
    they add up to at most ``max_bytes``; None otherwise (read it through Delta). With ``same_schema``, also None
    when a column is NOT NULL: a Parquet read reports every column nullable, Delta keeps the table's."""
    from pyspark.sql.types import StructType

    found = plain_files(path, max_bytes)
    if found is None:
        return None
    schema = StructType.fromJson(json.loads(found.metadata["schemaString"]))
    if same_schema and nullable(schema) != schema:
        return None
    if not found.files:
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).parquet(*(file_path(path, name) for name in found.files))


def input_bytes(df: DataFrame) -> int:
    """The estimated size of everything ``df`` reads: the sum of its optimized plan's leaves' statistics."""
    leaves = optimized_plan(df).collectLeaves()
    return sum(int(str(leaves.apply(i).stats().sizeInBytes())) for i in range(leaves.size()))  # a BigInt


def row_bytes(df: DataFrame) -> int:
    """Spark's estimate of the size of one row of ``df`` (its schema's default sizes)."""
    return schema_default_size(df)


def nullable(schema: StructType) -> StructType:
    """``schema`` with every column, array element and map value nullable, as Delta stores a DataFrame's schema
    and as a Parquet read reports it."""
    from pyspark.sql.types import StructType

    text = schema.json()
    for key in ("nullable", "containsNull", "valueContainsNull"):
        text = text.replace(f'"{key}":false', f'"{key}":true')
    return StructType.fromJson(json.loads(text))


def arrow_writable(schema: StructType) -> bool:
    """Whether the driver writes these columns as Spark would: no duplicate names, no types Arrow or Delta need
    special handling for (timestamps without time zone, intervals, variants, char/varchar, void)."""
    names = [f.name.lower() for f in schema.fields]
    return len(set(names)) == len(names) and all(_writable(f.dataType) for f in schema.fields)


def _writable(data_type: DataType) -> bool:
    from pyspark.sql import types as T

    if isinstance(data_type, T.StructType):
        return arrow_writable(data_type)
    if isinstance(data_type, T.ArrayType):
        return _writable(data_type.elementType)
    if isinstance(data_type, T.MapType):
        return _writable(data_type.keyType) and _writable(data_type.valueType)
    return isinstance(data_type, (T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType,
                                  T.DoubleType, T.DecimalType, T.StringType, T.BinaryType, T.DateType,
                                  T.TimestampType)) and not isinstance(data_type, (T.CharType, T.VarcharType))

"""Materialized views recomputed over small inputs are written by the driver.

A materialized view's recompute is a full overwrite. Through Spark, that is a write job and Delta's commit with
the jobs that reconstruct the target's state: about a second on two cores for a view of a few rows, more than its
query. When everything the view's query reads is small (the sum of its inputs' estimated sizes is below
``small_updates.max_input_bytes`` of ``conf/spark.yaml``, 64 MiB), its result is collected as Arrow (one job: the
query itself) and committed by the driver (``framework.driver_delta.overwrite_arrow``). Views with a layout only
Delta's writer produces (partitions, clustering, a declared schema, ``delta.*`` properties), column types the
driver's Parquet writer does not store as Spark does, or a target table the driver must not write, go through
Spark as before.

The view's query reads the pipeline's small tables the same way: straight from the Parquet files live in their
Delta logs (:func:`pinned_parquet`, the file list replayed on the driver), which spares Delta's state
reconstruction for each new version an input gained (0.3-0.5 s of jobs on two cores). Only tables whose files
hold their rows as they are qualify: reader protocol 1 (no deletion vectors, column mapping or other reader
features), no partition columns. A view's query is built at each recompute and run at once, so the list is
current; streaming flows never read this way (a stream-static join reads the static side again per batch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructType


def input_bytes(df: DataFrame) -> int:
    """The estimated size of everything ``df`` reads: the sum of its optimized plan's leaves' statistics."""
    leaves = df._jdf.queryExecution().optimizedPlan().collectLeaves()
    return sum(int(str(leaves.apply(i).stats().sizeInBytes())) for i in range(leaves.size()))  # a BigInt


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


def pinned_parquet(spark: SparkSession, path: str, max_bytes: int) -> DataFrame | None:
    """The Delta table at ``path`` as a Parquet read of the files live now, when it qualifies (see above) and
    they add up to at most ``max_bytes``; None otherwise (read it through Delta)."""
    import json
    from urllib.parse import unquote, urlsplit

    from pyspark.sql.types import StructType

    from framework.delta_log import live_files, protocol_and_metadata

    found = protocol_and_metadata(path) if max_bytes > 0 else None
    if found is None:
        return None
    _version, protocol, metadata = found
    if protocol is None or metadata is None or int(protocol.get("minReaderVersion", 1)) != 1 or metadata.get("partitionColumns") or \
            (metadata.get("configuration") or {}).get("delta.columnMapping.mode", "none") != "none":
        return None
    files = live_files(path)
    if files is None or sum(int(f.get("size") or 0) for f in files.values()) > max_bytes:
        return None
    schema = StructType.fromJson(json.loads(metadata["schemaString"]))
    if not files:
        return spark.createDataFrame([], schema)
    # an add's path is relative to the table (URL-encoded) or an absolute URI
    paths = [p if urlsplit(p).scheme or p.startswith("/") else f"{path.rstrip('/')}/{unquote(p)}" for p in files]
    return spark.read.schema(schema).parquet(*paths)


def overwrite_small(df: DataFrame, path: str, max_bytes: int, *, description: str | None,
                    configuration: dict[str, Any]) -> bool:
    """Recompute ``df`` into the Delta table at ``path`` through the driver when its inputs are small and the
    table allows it; False (nothing done) when Spark must write it."""
    from framework.driver_delta import NeedsSpark, check_overwrite, checkpoint_if_due, overwrite_arrow

    if max_bytes <= 0 or not arrow_writable(df.schema):
        return False
    try:
        check_overwrite(path, df.schema)
    except NeedsSpark:
        return False
    if input_bytes(df) > max_bytes:
        return False
    data = df.toArrow()
    try:
        overwrite_arrow(path, df.schema, data, description=description,
                        configuration={str(k): str(v) for k, v in configuration.items()})
    except NeedsSpark:
        return False  # the table changed meanwhile into one only Spark writes: its writer recomputes
    checkpoint_if_due(df.sparkSession, path)  # a view recomputed every second in continuous mode: a short log
    return True

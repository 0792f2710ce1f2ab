"""Empty DataFrames that stand in for a dataset while queries are analysed (resolution, expectation checks, APPLY
CHANGES targets): only their schema is ever used."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from framework import internals

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def empty_frame(spark: SparkSession, schema: Any) -> DataFrame:
    """An empty DataFrame of ``schema`` (a StructType or a schema string), built in the JVM as a local relation:
    ``spark.createDataFrame([], schema)`` goes through a Python RDD, 0.1-0.15 s in a fresh session, and fails on
    CHAR and VARCHAR columns, which read as STRING here as from a table declared with them."""
    from pyspark.sql.types import StructType

    struct = internals.parse_datatype(schema) if isinstance(schema, str) else schema
    if not isinstance(struct, StructType):  # a single type: createDataFrame names its column itself
        return spark.createDataFrame([], schema)
    struct = _chars_as_strings(struct)
    if internals.active_jvm() is None:  # no running context: PySpark's own path says so
        return spark.createDataFrame([], schema)
    return internals.empty_frame(spark, struct)


def _chars_as_strings(data_type: Any) -> Any:
    """``data_type`` with every CHAR and VARCHAR as STRING, as a table declared with them reads (Spark keeps the
    length as column metadata); a DataFrame of CHAR or VARCHAR columns is refused by Spark's analysis."""
    from pyspark.sql.types import (
        ArrayType,
        CharType,
        MapType,
        StringType,
        StructField,
        StructType,
        VarcharType,
    )

    if isinstance(data_type, (CharType, VarcharType)):
        return StringType()
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, _chars_as_strings(f.dataType), f.nullable, f.metadata)
                           for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(_chars_as_strings(data_type.elementType), data_type.containsNull)
    if isinstance(data_type, MapType):
        return MapType(_chars_as_strings(data_type.keyType), _chars_as_strings(data_type.valueType),
                       data_type.valueContainsNull)
    return data_type

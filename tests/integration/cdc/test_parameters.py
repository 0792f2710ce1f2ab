"""Every apply_changes parameter, each on a few rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.functions import col, struct

from framework.declarations import ApplyChanges
from tests.integration.cdc.helpers import new_target, ordered, rows, table

pytestmark = pytest.mark.spark

SCHEMA = "id INT, name STRING, city STRING, seq INT"


def test_keys_as_columns_and_struct_sequence_scd2(spark: SparkSession, storage: Path) -> None:
    spec = ApplyChanges(source="s", keys=(col("a"), "b"), sequence_by=struct("ts", "n"), stored_as_scd_type=2,
                        except_column_list=("ts", "n"))
    target = new_target(spark, storage, spec)
    data = [(1, "x", 10, 2, "v2"), (1, "x", 10, 1, "v1"), (1, "y", 10, 1, "w"), (1, "x", 9, 5, "v0")]
    target.apply_batch(spark.createDataFrame(data, "a INT, b STRING, ts INT, n INT, v STRING"), 0, "app")
    df = table(spark, target)
    assert dict(df.dtypes)["__START_AT"] == "struct<ts:int,n:int>"
    got = ordered([(r["a"], r["b"], r["v"], tuple(r["__START_AT"]), tuple(r["__END_AT"]) if r["__END_AT"] else None)
                   for r in df.collect()])
    assert got == ordered([(1, "x", "v0", (9, 5), (10, 1)), (1, "x", "v1", (10, 1), (10, 2)),
                           (1, "x", "v2", (10, 2), None), (1, "y", "w", (10, 1), None)])


def test_where_column_list_and_inline_sequence(spark: SparkSession, storage: Path) -> None:
    spec = ApplyChanges(source="s", keys=("id",), sequence_by="seq", where="city <> 'skip'",
                        column_list=("id", "name", "seq"))
    target = new_target(spark, storage, spec)
    data = [(1, "a", "x", 1), (1, "b", "skip", 2), (2, "c", "y", 1)]
    target.apply_batch(spark.createDataFrame(data, SCHEMA), 0, "app")
    assert table(spark, target).columns == ["id", "name", "seq"]
    assert rows(spark, target) == [(1, "a", 1), (2, "c", 1)]


def test_ignore_null_updates_scd1(spark: SparkSession, storage: Path) -> None:
    spec = ApplyChanges(source="s", keys=("id",), sequence_by="seq", ignore_null_updates=True,
                        except_column_list=("seq",))
    target = new_target(spark, storage, spec)
    target.apply_batch(spark.createDataFrame([(1, "a", "x", 1), (2, "b", "x", 1), (2, None, None, 2)], SCHEMA),
                       0, "app")
    assert rows(spark, target) == [(1, "a", "x"), (2, "b", "x")]
    # a late event (seq 0) is ignored; a newer one keeps non-NULL columns; in-batch NULLs fill from earlier events
    data = [(1, None, "y", 3), (1, "z", None, 0), (2, None, "q", 3), (2, "n", None, 4)]
    target.apply_batch(spark.createDataFrame(data, SCHEMA), 1, "app")
    assert rows(spark, target) == [(1, "a", "y"), (2, "n", "q")]


def test_ignore_null_updates_column_lists(spark: SparkSession, storage: Path) -> None:
    only_name = ApplyChanges(source="s", keys=("id",), sequence_by="seq", except_column_list=("seq",),
                             ignore_null_updates_column_list=("name",))
    target = new_target(spark, storage, only_name, "only_name")
    target.apply_batch(spark.createDataFrame([(1, "a", "x", 1), (1, None, None, 2)], SCHEMA), 0, "app")
    assert rows(spark, target) == [(1, "a", None)]
    all_but_name = ApplyChanges(source="s", keys=("id",), sequence_by="seq", except_column_list=("seq",),
                                ignore_null_updates_except_column_list=("name",))
    other = new_target(spark, storage, all_but_name, "all_but_name")
    other.apply_batch(spark.createDataFrame([(1, "a", "x", 1), (1, None, None, 2)], SCHEMA), 0, "app")
    assert rows(spark, other) == [(1, None, "x")]


def test_columns_to_update(spark: SparkSession, storage: Path) -> None:
    spec = ApplyChanges(source="s", keys=("id",), sequence_by="seq", except_column_list=("seq",),
                        columns_to_update="cols")
    target = new_target(spark, storage, spec)
    schema = "id INT, name STRING, city STRING, seq INT, cols ARRAY<STRING>"
    target.apply_batch(spark.createDataFrame([(1, "a", "x", 1, None)], schema), 0, "app")
    target.apply_batch(spark.createDataFrame([(1, "b", "y", 2, ["city"]), (2, "c", "z", 1, ["name"])], schema),
                       1, "app")
    assert table(spark, target).columns == ["id", "name", "city"]
    assert rows(spark, target) == [(1, "a", "y"), (2, "c", None)]


def test_ignore_null_updates_scd2_and_declared_schema(spark: SparkSession, storage: Path) -> None:
    spec = ApplyChanges(source="s", keys=("id",), sequence_by="seq", except_column_list=("seq",),
                        ignore_null_updates=True, stored_as_scd_type=2)
    schema = "id BIGINT, name STRING, city STRING, __START_AT BIGINT, __END_AT BIGINT"
    target = new_target(spark, storage, spec, schema=schema)
    data = [(1, "a", "x", 1), (1, None, "y", 2), (1, None, None, 3)]
    target.apply_batch(spark.createDataFrame(data, SCHEMA), 0, "app")
    assert table(spark, target).dtypes == [("id", "bigint"), ("name", "string"), ("city", "string"),
                                           ("__START_AT", "bigint"), ("__END_AT", "bigint")]
    assert rows(spark, target) == [(1, "a", "x", 1, 2), (1, "a", "y", 2, None)]

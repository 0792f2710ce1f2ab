"""assert_df_equal and assert_schema_equal: what they accept, and messages that say what differs."""

from __future__ import annotations

from datetime import date

import pytest
from pyspark.sql import Row
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

from framework.testing import assert_df_equal, assert_schema_equal, schema_diff

ACTUAL = StructType([StructField("id", LongType(), False), StructField("name", StringType()),
                     StructField("tags", ArrayType(StringType(), False))])


def test_schema_diff_names_missing_extra_and_changed_columns() -> None:
    expected = StructType([StructField("id", StringType()), StructField("tags", ArrayType(StringType())),
                           StructField("email", StringType())])
    diff = schema_diff(ACTUAL, expected)
    assert (diff.missing, diff.extra, diff.changed) == (("email",), ("name",), (("id", "bigint", "string"),))
    assert diff.render().splitlines() == ["missing column 'email' (expected, not in actual)",
                                          "extra column 'name' (in actual, not expected)",
                                          "column 'id' is bigint, expected string"]


def test_schema_diff_nullability_and_order_only_when_asked() -> None:
    relaxed = StructType([StructField("tags", ArrayType(StringType(), True)), StructField("name", StringType()),
                          StructField("id", LongType(), True)])
    assert not schema_diff(ACTUAL, relaxed)
    strict = schema_diff(ACTUAL, relaxed, check_nullable=True, check_order=True)
    assert strict.changed == (("tags", "array<string>", "array<string>"), ("id", "bigint NOT NULL", "bigint"))
    assert strict.order


@pytest.mark.spark
def test_assert_schema_equal_takes_ddl(spark) -> None:  # type: ignore[no-untyped-def]  # DDL is parsed by Spark
    assert_schema_equal(ACTUAL, "id bigint, name string, tags array<string>")
    with pytest.raises(AssertionError, match="column 'name' is string, expected int"):
        assert_schema_equal(ACTUAL, "id bigint, name int, tags array<string>")


@pytest.mark.spark
def test_rows_compared_as_a_multiset(spark) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([(1, "a"), (2, "b"), (2, "b")], "id bigint, name string")
    assert_df_equal(df, [(2, "b"), (1, "a"), (2, "b")])
    assert_df_equal(df, [{"name": "b", "id": 2}, Row(id=1, name="a"), (2, "b")], "id bigint, name string")
    assert_df_equal(df, spark.createDataFrame([(2, "b"), (2, "b"), (1, "a")], "id bigint, name string"))
    with pytest.raises(AssertionError) as diff:
        assert_df_equal(df, [(1, "a"), (2, "b"), (3, "c")])
    assert str(diff.value).splitlines() == [
        "rows differ (columns id, name):", "actual has 3 rows, expected 3",
        "missing (1, expected but not in actual):", "  (3, 'c')",
        "unexpected (1, in actual but not expected):", "  (2, 'b')"]


@pytest.mark.spark
def test_order_schema_and_nested_values(spark) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([(1, date(2024, 1, 2), {"k": 1}, [Row(x=1)])],
                               "id int, day date, m map<string,int>, s array<struct<x:int>>")
    assert_df_equal(df, [(1, date(2024, 1, 2), {"k": 1}, [(1,)])], order=True)
    with pytest.raises(AssertionError, match="column 'id' is int, expected bigint"):
        assert_df_equal(df, [(1, date(2024, 1, 2), {"k": 1}, [(1,)])], "id bigint, day date, m map<string,int>, "
                        "s array<struct<x:int>>")
    two = spark.createDataFrame([(1,), (2,)], "id int")
    with pytest.raises(AssertionError, match=r"row 0: actual \(1\), expected \(2\)"):
        assert_df_equal(two.orderBy("id"), [(2,), (1,)], order=True)
    with pytest.raises(AssertionError, match="has 2 values for 1 columns"):
        assert_df_equal(two, [(1, 2)])

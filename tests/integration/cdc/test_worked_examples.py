"""SEMANTICS.md §3 worked examples, exactly."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.functions import expr

from tests.integration.cdc.helpers import USERS, USERS_SCHEMA, new_target, ordered, rows, table, users_spec

pytestmark = pytest.mark.spark


def test_scd1_example(spark: SparkSession, storage: Path) -> None:
    target = new_target(spark, storage, users_spec())
    metrics = target.apply_batch(spark.createDataFrame(USERS, USERS_SCHEMA), 0, "app")
    assert table(spark, target).columns == ["userId", "name", "city"]
    assert rows(spark, target) == [(124, "Raul", "Oaxaca"), (125, "Mercedes", "Guadalajara"), (126, "Lily", "Cancun")]
    assert (metrics.num_upserted_rows, metrics.num_deleted_rows, metrics.num_input_rows) == (3, 0, 8)


def test_scd1_example_with_truncate(spark: SparkSession, storage: Path) -> None:
    spec = users_spec(apply_as_truncates=expr("operation = 'TRUNCATE'"))
    target = new_target(spark, storage, spec)
    data = [*USERS, (None, None, None, "TRUNCATE", 3)]
    target.apply_batch(spark.createDataFrame(data, USERS_SCHEMA), 0, "app")
    assert rows(spark, target) == [(125, "Mercedes", "Guadalajara")]


def test_scd2_example(spark: SparkSession, storage: Path) -> None:
    target = new_target(spark, storage, users_spec(stored_as_scd_type=2))
    target.apply_batch(spark.createDataFrame(USERS, USERS_SCHEMA), 0, "app")
    df = table(spark, target)
    assert df.columns == ["userId", "name", "city", "__START_AT", "__END_AT"]
    assert dict(df.dtypes)["__START_AT"] == "int" and dict(df.dtypes)["__END_AT"] == "int"
    assert rows(spark, target) == ordered([
        (123, "Isabel", "Monterrey", 1, 5), (123, "Isabel", "Chihuahua", 5, 6),
        (124, "Raul", "Oaxaca", 1, None),
        (125, "Mercedes", "Tijuana", 2, 5), (125, "Mercedes", "Mexicali", 5, 6),
        (125, "Mercedes", "Guadalajara", 6, None),
        (126, "Lily", "Cancun", 2, None),
    ])


def test_scd2_example_track_history_except_city(spark: SparkSession, storage: Path) -> None:
    spec = users_spec(stored_as_scd_type=2, track_history_except_column_list=("city",))
    target = new_target(spark, storage, spec)
    target.apply_batch(spark.createDataFrame(USERS, USERS_SCHEMA), 0, "app")
    assert rows(spark, target) == ordered([
        (123, "Isabel", "Chihuahua", 1, 6), (124, "Raul", "Oaxaca", 1, None),
        (125, "Mercedes", "Guadalajara", 2, None), (126, "Lily", "Cancun", 2, None),
    ])

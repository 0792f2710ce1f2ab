"""The newer AUTO CDC forms run (issue 36): SQL ``IGNORE NULL UPDATES ON (...)``, ``COLUMNS TO UPDATE``,
``AUTO CDC ONCE`` and ``AUTO CDC ... FROM SNAPSHOT`` (SCD 2), and Python's
``apply_changes_from_snapshot(snapshot_and_version=(df, version))``, over two updates."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from framework.runner.update import UpdateOptions, run_update
from tests.integration.runner.pipeline_factory import make_pipeline

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

SQL = """
CREATE OR REFRESH STREAMING TABLE users;
CREATE FLOW users_cdc AS AUTO CDC INTO users FROM STREAM(cdc_new.events) KEYS (id)
  IGNORE NULL UPDATES ON (city) SEQUENCE BY seq COLUMNS * EXCEPT (seq, changed);

CREATE OR REFRESH STREAMING TABLE partial;
CREATE FLOW partial_cdc AS AUTO CDC INTO partial FROM STREAM(cdc_new.events) KEYS (id)
  SEQUENCE BY seq COLUMNS * EXCEPT (seq) COLUMNS TO UPDATE changed;

CREATE OR REFRESH STREAMING TABLE once_copy;
CREATE FLOW once_copy_cdc AS AUTO CDC ONCE INTO once_copy FROM cdc_new.events KEYS (id)
  SEQUENCE BY seq COLUMNS * EXCEPT (seq, changed);

CREATE OR REFRESH MATERIALIZED VIEW snap AS SELECT id, city FROM cdc_new.places;
CREATE OR REFRESH STREAMING TABLE places_history;
CREATE FLOW places_snap AS AUTO CDC INTO places_history FROM SNAPSHOT snap KEYS (id) STORED AS SCD TYPE 2;
"""

PYTHON = """
import dlt

dlt.create_streaming_table("fixed")
dlt.apply_changes_from_snapshot(
    target="fixed", keys=["id"],
    snapshot_and_version=(spark.createDataFrame([(1, "a"), (2, "b")], "id INT, v STRING"), 1))
"""
EVENTS = "id INT, name STRING, city STRING, seq INT, changed ARRAY<STRING>"


def _table(spark: SparkSession, root: Path, name: str, rows: list[tuple[Any, ...]], schema: str, mode: str) -> None:
    path = root / "external" / name
    spark.createDataFrame(rows, schema).write.format("delta").mode(mode).save(str(path))
    spark.sql("CREATE DATABASE IF NOT EXISTS cdc_new")
    spark.sql(f"CREATE TABLE IF NOT EXISTS cdc_new.{name} USING DELTA LOCATION '{path}'")


def _rows(spark: SparkSession, root: Path, table: str, *cols: str) -> list[tuple[Any, ...]]:
    df = spark.read.format("delta").load(str(root / table))
    return sorted((tuple(r) for r in df.selectExpr(*cols).collect()), key=repr)


def test_newer_auto_cdc_forms(spark: SparkSession, tmp_path: Path) -> None:
    for name in ("events", "places"):
        spark.sql(f"DROP TABLE IF EXISTS cdc_new.{name}")
    _table(spark, tmp_path, "events", [(1, "a", "x", 1, None), (1, "b", "z", 2, ["name"]),
                                       (2, "c", None, 1, None)], EVENTS, "overwrite")
    _table(spark, tmp_path, "places", [(1, "x"), (2, "y")], "id INT, city STRING", "overwrite")
    spec = make_pipeline(tmp_path, {"cdc.sql": SQL, "fixed.py": PYTHON})
    first = run_update(spec, UpdateOptions(), spark=spark)
    assert first.succeeded, first.error or [f.error for f in first.flows if f.error]
    tables = spec.tables_dir
    assert _rows(spark, tables, "users", "id", "name", "city") == [(1, "b", "z"), (2, "c", None)]
    assert _rows(spark, tables, "partial", "id", "name", "city") == [(1, "b", "x"), (2, "c", None)]
    assert "changed" not in spark.read.format("delta").load(str(tables / "partial")).columns
    assert _rows(spark, tables, "once_copy", "id", "name", "city") == [(1, "b", "z"), (2, "c", None)]
    assert _rows(spark, tables, "fixed", "id", "v") == [(1, "a"), (2, "b")]
    assert _rows(spark, tables, "places_history", "id", "city", "__END_AT IS NULL") == [
        (1, "x", True), (2, "y", True)]

    _table(spark, tmp_path, "events", [(1, None, None, 3, ["city"]), (2, "d", None, 2, None)], EVENTS, "append")
    _table(spark, tmp_path, "places", [(1, "x2")], "id INT, city STRING", "overwrite")
    second = run_update(spec, UpdateOptions(), spark=spark)
    assert second.succeeded, second.error or [f.error for f in second.flows if f.error]
    # users: NULL city ignored, NULL name applied; partial: only city is updated at 3
    assert _rows(spark, tables, "users", "id", "name", "city") == [(1, None, "z"), (2, "d", None)]
    assert _rows(spark, tables, "partial", "id", "name", "city") == [(1, "b", None), (2, "d", None)]
    assert _rows(spark, tables, "once_copy", "id", "name", "city") == [(1, "b", "z"), (2, "c", None)]
    assert _rows(spark, tables, "fixed", "id", "v") == [(1, "a"), (2, "b")]  # its one snapshot, applied once
    assert _rows(spark, tables, "places_history", "id", "city", "__END_AT IS NULL") == [
        (1, "x", False), (1, "x2", True), (2, "y", False)]

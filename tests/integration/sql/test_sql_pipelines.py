"""DLT SQL pipelines run locally: every statement form, mixed with Python, and three of Databricks' documented
examples with their documented results (reference/SEMANTICS.md §3 holds the CDC example's results)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.errors import GraphError, SqlError
from framework.runner.update import UpdateOptions, resolve_pipeline, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

USERS = [  # Databricks' CDC documentation example, arrival order as listed there
    (124, "Raul", "Oaxaca", "INSERT", 1), (123, "Isabel", "Monterrey", "INSERT", 1),
    (125, "Mercedes", "Tijuana", "INSERT", 2), (126, "Lily", "Cancun", "INSERT", 2),
    (123, None, None, "DELETE", 6), (125, "Mercedes", "Guadalajara", "UPDATE", 6),
    (125, "Mercedes", "Mexicali", "UPDATE", 5), (123, "Isabel", "Chihuahua", "UPDATE", 5),
]


def _users_table(spark: SparkSession, tmp_path: Path, rows: list[tuple[object, ...]]) -> None:
    """The documentation's `cdc_data.users` source table (a table outside the pipeline)."""
    schema = "userId INT, name STRING, city STRING, operation STRING, sequenceNum INT"
    path = tmp_path / "users"
    spark.createDataFrame(rows, schema).write.format("delta").mode("overwrite").save(str(path))
    spark.sql("CREATE DATABASE IF NOT EXISTS cdc_data")
    spark.sql("DROP TABLE IF EXISTS cdc_data.users")
    spark.sql(f"CREATE TABLE cdc_data.users USING DELTA LOCATION '{path}'")


def _rows(spark: SparkSession, spec: object, table: str, *cols: str) -> list[tuple[object, ...]]:
    df = spark.read.format("delta").load(str(spec.tables_dir / table))  # type: ignore[attr-defined]
    return sorted((tuple(r) for r in df.select(*cols).collect()), key=repr)


def test_documented_cdc_example_scd1_with_truncate(spark: SparkSession, tmp_path: Path) -> None:
    """Databricks' SQL for the SCD 1 example (AUTO CDC flow into a declared streaming table)."""
    _users_table(spark, tmp_path, USERS)
    spec = make_pipeline(tmp_path, {"cdc.sql": """
        CREATE OR REFRESH STREAMING TABLE target;

        CREATE FLOW flowname AS AUTO CDC INTO target
        FROM stream(cdc_data.users)
        KEYS (userId)
        APPLY AS DELETE WHEN operation = "DELETE"
        APPLY AS TRUNCATE WHEN operation = "TRUNCATE"
        SEQUENCE BY sequenceNum
        COLUMNS * EXCEPT (operation, sequenceNum)
        STORED AS SCD TYPE 1;
    """})
    result = run_update(spec, UpdateOptions(), spark=spark)
    assert result.succeeded, result.error or [f.error for f in result.flows]
    assert _rows(spark, spec, "target", "userId", "name", "city") == [
        (124, "Raul", "Oaxaca"), (125, "Mercedes", "Guadalajara"), (126, "Lily", "Cancun")]
    _users_table(spark, tmp_path, [*USERS, (None, None, None, "TRUNCATE", 3)])
    spec = make_pipeline(tmp_path / "again", {"cdc.sql": (tmp_path / "pipeline" / "cdc.sql").read_text()})
    again = run_update(spec, UpdateOptions(), spark=spark)
    assert again.succeeded, again.error or [f.error for f in again.flows]
    assert _rows(spark, spec, "target", "userId", "name", "city") == [(125, "Mercedes", "Guadalajara")]


def test_documented_cdc_example_scd2_and_track_history(spark: SparkSession, tmp_path: Path) -> None:
    """Databricks' SQL for the SCD 2 example (legacy APPLY CHANGES spelling), and TRACK HISTORY ON * EXCEPT."""
    _users_table(spark, tmp_path, USERS)
    spec = make_pipeline(tmp_path, {"cdc.sql": """
        CREATE OR REFRESH STREAMING TABLE target;
        CREATE OR REFRESH STREAMING TABLE target_city_untracked;

        APPLY CHANGES INTO live.target
        FROM stream(cdc_data.users)
        KEYS (userId)
        APPLY AS DELETE WHEN operation = "DELETE"
        SEQUENCE BY sequenceNum
        COLUMNS * EXCEPT (operation, sequenceNum)
        STORED AS SCD TYPE 2;

        CREATE FLOW untracked AS APPLY CHANGES INTO target_city_untracked
        FROM STREAM cdc_data.users
        KEYS (userId)
        APPLY AS DELETE WHEN operation = "DELETE"
        SEQUENCE BY sequenceNum
        COLUMNS * EXCEPT (operation, sequenceNum)
        STORED AS SCD TYPE 2
        TRACK HISTORY ON * EXCEPT (city);
    """})
    result = run_update(spec, UpdateOptions(), spark=spark)
    assert result.succeeded, result.error or [f.error for f in result.flows]
    cols = ("userId", "name", "city", "__START_AT", "__END_AT")
    assert _rows(spark, spec, "target", *cols) == sorted([
        (123, "Isabel", "Monterrey", 1, 5), (123, "Isabel", "Chihuahua", 5, 6), (124, "Raul", "Oaxaca", 1, None),
        (125, "Mercedes", "Tijuana", 2, 5), (125, "Mercedes", "Mexicali", 5, 6),
        (125, "Mercedes", "Guadalajara", 6, None), (126, "Lily", "Cancun", 2, None)], key=repr)
    assert _rows(spark, spec, "target_city_untracked", *cols) == sorted([
        (123, "Isabel", "Chihuahua", 1, 6), (124, "Raul", "Oaxaca", 1, None),
        (125, "Mercedes", "Guadalajara", 2, None), (126, "Lily", "Cancun", 2, None)], key=repr)


def test_documented_multiple_flows_into_one_streaming_table(spark: SparkSession, tmp_path: Path) -> None:
    """Databricks' "append flows" SQL example: two regions' streams into one table, plus a one-time backfill."""
    for region, rows in {"us": ['{"id": 1, "v": "a"}'], "eu": ['{"id": 2, "v": "b"}', '{"id": 3, "v": "c"}'],
                         "old": ['{"id": 0, "v": "z"}']}.items():
        write_json_lines(tmp_path / region, "part.json", rows)
    spec = make_pipeline(tmp_path, {"flows.sql": f"""
        CREATE OR REFRESH STREAMING TABLE all_regions;

        CREATE FLOW us_flow AS INSERT INTO all_regions BY NAME
        SELECT id, v, 'us' AS region FROM STREAM read_files('{tmp_path / "us"}', format => 'json');

        CREATE FLOW eu_flow AS INSERT INTO all_regions BY NAME
        SELECT id, v, 'eu' AS region FROM STREAM read_files('{tmp_path / "eu"}', format => 'json');

        CREATE FLOW backfill AS INSERT INTO ONCE all_regions BY NAME
        SELECT CAST(id AS BIGINT) AS id, v, 'old' AS region FROM read_files('{tmp_path / "old"}', format => 'json');
    """})
    first = run_update(spec, UpdateOptions(), spark=spark)
    assert first.succeeded, first.error or [f.error for f in first.flows]
    assert _rows(spark, spec, "all_regions", "id", "v", "region") == [
        (0, "z", "old"), (1, "a", "us"), (2, "b", "eu"), (3, "c", "eu")]
    write_json_lines(tmp_path / "us", "more.json", ['{"id": 4, "v": "d"}'])
    second = run_update(spec, UpdateOptions(), spark=spark)
    assert second.succeeded
    assert [r[0] for r in _rows(spark, spec, "all_regions", "id")] == [0, 1, 2, 3, 4]  # once ran once, us grew


MIXED_SQL = """
-- bronze in SQL: Auto Loader through read_files, with an expectation that drops rows
CREATE OR REFRESH STREAMING TABLE orders_raw (
  CONSTRAINT valid_id EXPECT (order_id IS NOT NULL) ON VIOLATION DROP ROW
) COMMENT 'raw orders' TBLPROPERTIES ('quality' = 'bronze')
AS SELECT * FROM STREAM read_files('${landing}', format => 'json', schemaHints => 'amount DOUBLE');

/* gold in SQL, reading the Python silver table three ways */
CREATE OR REFRESH MATERIALIZED VIEW totals AS
SELECT customer, sum(amount) AS total FROM LIVE.orders_silver GROUP BY customer;

CREATE TEMPORARY LIVE VIEW big_orders AS SELECT * FROM orders_silver WHERE amount > 4;

CREATE MATERIALIZED VIEW big_count AS
WITH b AS (SELECT * FROM big_orders) SELECT count(*) AS n FROM b;
"""

MIXED_PY = """
import dlt

@dlt.table
@dlt.expect("positive", "amount > 0")
def orders_silver():
    return dlt.read_stream("orders_raw").select("order_id", "customer", "amount")
"""


def test_mixed_python_and_sql_pipeline(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"order_id": 1, "customer": "a", "amount": 5}',
                                         '{"order_id": null, "customer": "b", "amount": 3}',
                                         '{"order_id": 3, "customer": "a", "amount": -1, "coupon": "x"}'])
    spec = make_pipeline(tmp_path, {"bronze_gold.sql": MIXED_SQL, "silver.py": MIXED_PY},
                         {"landing": str(landing)})
    result = run_update(spec, UpdateOptions(), spark=spark)
    assert result.succeeded, result.error or [f.error for f in result.flows]
    raw = result.flow("orders_raw")
    assert (raw.num_output_rows, raw.dropped_records) == (2, 1)
    assert [(e.name, e.passed_records, e.failed_records) for e in raw.expectations] == [("valid_id", 2, 1)]
    assert result.flow("orders_silver").expectations[0].failed_records == 1
    assert _rows(spark, spec, "totals", "customer", "total") == [("a", 4.0)]
    assert _rows(spark, spec, "big_count", "n") == [(1,)]
    assert _rows(spark, spec, "orders_raw", "order_id", "coupon") == [(1, None), (3, "x")]  # inferred
    kinds = result.kinds
    assert (kinds["orders_raw"], kinds["totals"], kinds["big_orders"]) == (
        "streaming_table", "materialized_view", "view")
    write_json_lines(landing, "b.json", ['{"order_id": 5, "customer": "c", "amount": 7}',
                                         '{"order_id": 6, "customer": "c", "amount": "seven"}'])
    second = run_update(spec, UpdateOptions(), spark=spark)
    assert second.succeeded, second.error or [f.error for f in second.flows]
    assert second.flow("orders_raw").num_output_rows == 2  # incremental: only the new file
    rescued = dict(_rows(spark, spec, "orders_raw", "order_id", "_rescued_data"))
    assert rescued[5] is None and '"amount":"seven"' in rescued[6]  # the value that does not fit is rescued
    assert _rows(spark, spec, "big_count", "n") == [(2,)]


def test_validate_names_sql_errors_with_file_line_and_column(spark: SparkSession, tmp_path: Path) -> None:
    spec = make_pipeline(tmp_path, {"bad.sql": """
        CREATE MATERIALIZED VIEW fine AS SELECT 1 AS x;

        CREATE MATERIALIZED VIEW reads_unknown AS
        SELECT * FROM LIVE.fien;
    """})
    with pytest.raises(GraphError) as info:
        resolve_pipeline(spec, spark)
    assert "UNRESOLVED_DATASET" in info.value.codes
    problem = next(p for p in info.value.problems if p.code == "UNRESOLVED_DATASET")
    assert problem.file is not None and problem.file.endswith("bad.sql") and problem.line == 4
    assert "Did you mean 'fine'" in problem.message

    spec = make_pipeline(tmp_path / "syntax", {"bad.sql": """
        CREATE MATERIALIZED VIEW broken AS
        SELECT a, FROM (SELECT 1 AS a);
    """})
    with pytest.raises(SqlError) as syntax:
        resolve_pipeline(spec, spark)
    assert syntax.value.code == "SQL_PARSE_ERROR" and syntax.value.dataset == "broken"
    assert syntax.value.file is not None and syntax.value.file.endswith("bad.sql")
    assert syntax.value.line == 3 and syntax.value.column is not None
    assert "bad.sql:3:" in str(syntax.value)


def test_unsupported_statements_and_clauses_are_errors_never_skipped(spark: SparkSession, tmp_path: Path) -> None:
    spec = make_pipeline(tmp_path, {"bad.sql": """
        CREATE MATERIALIZED VIEW ok AS SELECT 1 AS x;
        INSERT INTO ok VALUES (2);
    """})
    with pytest.raises(SqlError) as info:
        resolve_pipeline(spec, spark)
    assert info.value.code == "SQL_UNSUPPORTED_STATEMENT"
    assert (info.value.line, info.value.column) == (3, 1)  # make_pipeline dedents the file


NOTEBOOK = """-- Databricks notebook source
-- MAGIC %md
-- MAGIC # Orders; this cell is markdown; a ; here ends nothing

-- COMMAND ----------

CREATE OR REFRESH MATERIALIZED VIEW numbers AS SELECT id FROM range(5)

-- COMMAND ----------

-- MAGIC %sql
-- MAGIC CREATE OR REFRESH MATERIALIZED VIEW evens (
-- MAGIC   CONSTRAINT even EXPECT (id % 2 = 0) ON VIOLATION DROP ROW
-- MAGIC ) AS SELECT * FROM LIVE.numbers
"""


def test_sql_notebook_with_markdown_and_magic_cells(spark: SparkSession, tmp_path: Path) -> None:
    spec = make_pipeline(tmp_path, {"orders": NOTEBOOK})  # a workspace notebook: no extension
    result = run_update(spec, UpdateOptions(), spark=spark)
    assert result.succeeded, result.error or [f.error for f in result.flows]
    assert _rows(spark, spec, "evens", "id") == [(0,), (2,), (4,)]
    assert result.flow("evens").dropped_records == 2
    assert result.flow("evens").expectations[0].failed_records == 2

"""Issue 36: SQL functions under Unity Catalog names, in a pipeline with two catalogs (``main``, the pipeline's,
and ``fx``). ``CREATE [OR REPLACE] FUNCTION catalog.schema.f`` from a Python file's ``spark.sql`` and from a SQL
file, ``CREATE TEMPORARY FUNCTION``, ``DROP FUNCTION``, and three-part calls in SQL queries, ``spark.sql`` and
``expr`` inside query functions, and in the session after the run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.errors import SqlError
from framework.runner.update import UpdateOptions, run_update
from framework.spec import parse_spec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PYTHON = """
from pyspark import pipelines as dp
from pyspark.sql.functions import expr

spark.sql("CREATE SCHEMA IF NOT EXISTS fx.util")
spark.sql("CREATE SCHEMA IF NOT EXISTS main.util")
spark.sql("CREATE OR REPLACE FUNCTION fx.util.plus1(x BIGINT) RETURNS BIGINT RETURN x + 1")
spark.sql("CREATE FUNCTION IF NOT EXISTS fx.util.gone(x BIGINT) RETURNS BIGINT RETURN x")
spark.sql("DROP FUNCTION IF EXISTS fx.util.gone")

@dp.materialized_view
def numbers():
    return spark.range(1, 4)

@dp.materialized_view
def from_python():
    return (spark.read.table("numbers")
            .select("id", expr("main.util.times2(id)").alias("twice"), expr("fx.util.plus1(id)").alias("next")))

@dp.materialized_view
def from_spark_sql():
    return spark.sql("SELECT id, fx.util.plus1(main.util.times2(id)) AS y FROM numbers")
"""

SQL = """
CREATE OR REPLACE FUNCTION main.util.times2(x BIGINT) RETURNS BIGINT RETURN x * 2;
CREATE OR REPLACE TEMPORARY FUNCTION minus1(x BIGINT) RETURNS BIGINT RETURN x - 1;

CREATE OR REFRESH MATERIALIZED VIEW from_sql AS
SELECT id, main.util.times2(id) AS twice, fx.util.plus1(id) AS next, minus1(id) AS prev FROM sales.numbers;
"""


def _spec(tmp_path: Path, sql: str = SQL) -> object:
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "a_functions.py").write_text(PYTHON)
    (tmp_path / "pipeline" / "b_queries.sql").write_text(sql)
    raw = {"name": "functions", "libraries": [{"glob": {"include": "pipeline/**"}}], "storage": "storage",
           "catalog": "main", "schema": "sales"}
    return parse_spec(raw, source=str(tmp_path / "spec.yaml"), default_root=tmp_path)


def _rows(spark: SparkSession, query: str) -> list[tuple[object, ...]]:
    return sorted(tuple(r) for r in spark.sql(query).collect())


def test_sql_functions_under_three_part_names(spark: SparkSession, tmp_path: Path) -> None:
    result = run_update(_spec(tmp_path), UpdateOptions(), spark=spark)  # type: ignore[arg-type]
    assert result.succeeded, result.error or [f.error for f in result.flows]

    assert _rows(spark, "SELECT * FROM main.sales.from_sql") == [(1, 2, 2, 0), (2, 4, 3, 1), (3, 6, 4, 2)]
    assert _rows(spark, "SELECT * FROM sales.from_python") == [(1, 2, 2), (2, 4, 3), (3, 6, 4)]
    assert _rows(spark, "SELECT * FROM sales.from_spark_sql") == [(1, 3), (2, 5), (3, 7)]
    # the functions live in their catalogs: callable after the run, listed there, not in the other catalog
    assert spark.sql("SELECT fx.util.plus1(41), main.util.times2(21)").collect()[0] == (42, 42)
    listed = {r[0] for r in spark.sql("SHOW USER FUNCTIONS IN fx.util").collect()}
    assert "fx.util.plus1" in listed and "fx.util.gone" not in listed
    assert not spark.catalog.functionExists("fx__util.gone")
    with pytest.raises(Exception, match="UNRESOLVED_ROUTINE"):
        spark.sql("SELECT fx.util.times2(1)").collect()


def test_a_failing_create_function_names_file_and_line(spark: SparkSession, tmp_path: Path) -> None:
    sql = "CREATE OR REFRESH MATERIALIZED VIEW ok AS SELECT 1 AS x;\n\n" \
          "CREATE FUNCTION fx.no_such_schema.f(x BIGINT) RETURNS BIGINT RETURN x;\n"
    result = run_update(_spec(tmp_path, sql), UpdateOptions(), spark=spark)  # type: ignore[arg-type]
    error = result.error
    assert not result.succeeded and isinstance(error, SqlError) and error.code == "SQL_FUNCTION_ERROR"
    assert error.file is not None and error.file.endswith("b_queries.sql") and error.line == 3
    assert "fx.no_such_schema.f" in str(error) and "SCHEMA_NOT_FOUND" in str(error)

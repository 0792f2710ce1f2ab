"""Issue 36's newer SQL flow forms, in one pipeline (two updates): ``FLOW REPLACE WHERE predicate BY NAME
query`` inline in ``CREATE STREAMING TABLE``, ``CREATE FLOW ... AS INSERT INTO t BY NAME REPLACE WHERE ...``
(the matched rows deleted and the flow's rows for that range inserted, in one commit; other rows untouched),
``CREATE TABLE ... FLOW INSERT [ONCE] BY NAME query`` with expectations and a column DEFAULT; the spec's
pipeline ``parameters`` as ``:name`` in SQL; and a non-boolean predicate's error."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.runner.update import UpdateOptions, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

SQL = """
CREATE OR REFRESH MATERIALIZED VIEW sales AS
SELECT CAST(id AS BIGINT) AS id, region, CAST(amount AS BIGINT) AS amount
FROM read_files('{landing}', format => 'json');

CREATE OR REFRESH STREAMING TABLE eu_sales
FLOW REPLACE WHERE region = 'eu' BY NAME
SELECT id, region, amount FROM sales;

CREATE FLOW us_backfill AS INSERT INTO ONCE eu_sales BY NAME
SELECT CAST(100 AS BIGINT) AS id, 'us' AS region, CAST(7 AS BIGINT) AS amount;

CREATE OR REFRESH STREAMING TABLE big_sales;

CREATE FLOW big_only AS INSERT INTO big_sales BY NAME REPLACE WHERE amount >= 10
SELECT id, region, amount FROM sales;

CREATE TABLE audited (id BIGINT, amount BIGINT, origin STRING DEFAULT concat('land', 'ing'),
  CONSTRAINT positive EXPECT (amount > 0) ON VIOLATION DROP ROW)
FLOW INSERT BY NAME SELECT id, amount FROM STREAM read_files('{landing}', format => 'json');

CREATE TABLE seeded FLOW INSERT ONCE BY NAME SELECT 1 AS id;

CREATE OR REFRESH MATERIALIZED VIEW over_min AS
SELECT id, :label AS label FROM sales WHERE amount >= CAST(:min_amount AS BIGINT);
"""

BAD = """
CREATE OR REFRESH STREAMING TABLE t
FLOW REPLACE WHERE amount + 1 BY NAME
SELECT 1 AS amount;
"""


def _rows(spark: SparkSession, spec: object, table: str) -> list[tuple[object, ...]]:
    df = spark.read.format("delta").load(str(spec.tables_dir / table))  # type: ignore[attr-defined]
    return sorted((tuple(r) for r in df.collect()), key=repr)


def test_replace_where_and_table_flows(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id": 1, "region": "eu", "amount": 5}',
                                         '{"id": 2, "region": "eu", "amount": 20}',
                                         '{"id": 3, "region": "us", "amount": -1}'])
    spec = make_pipeline(tmp_path, {"flows.sql": SQL.format(landing=landing)},
                         parameters={"min_amount": "10", "label": "big"})
    first = run_update(spec, UpdateOptions(), spark=spark)
    assert first.succeeded, first.error or [f.error for f in first.flows]
    assert _rows(spark, spec, "eu_sales") == sorted([(1, "eu", 5), (2, "eu", 20), (100, "us", 7)], key=repr)
    assert _rows(spark, spec, "big_sales") == sorted([(2, "eu", 20)], key=repr)
    assert _rows(spark, spec, "audited") == sorted([(1, 5, "landing"), (2, 20, "landing")], key=repr)
    assert first.flow("audited").dropped_records == 1
    assert _rows(spark, spec, "seeded") == sorted([(1,)], key=repr)
    assert _rows(spark, spec, "over_min") == [(2, "big")]  # pipeline parameters bound to :name

    # the source changes: id 1's amount, id 2 gone, a new eu row; the us row (outside the predicate) stays
    (landing / "a.json").unlink()
    write_json_lines(landing, "b.json", ['{"id": 1, "region": "eu", "amount": 50}',
                                         '{"id": 4, "region": "eu", "amount": 9}'])
    second = run_update(spec, UpdateOptions(), spark=spark)
    assert second.succeeded, second.error or [f.error for f in second.flows]
    assert _rows(spark, spec, "eu_sales") == sorted([(1, "eu", 50), (4, "eu", 9), (100, "us", 7)], key=repr)
    assert _rows(spark, spec, "big_sales") == sorted([(1, "eu", 50)], key=repr)
    assert _rows(spark, spec, "audited") == sorted([(1, 5, "landing"), (1, 50, "landing"), (2, 20, "landing"),
                                                    (4, 9, "landing")], key=repr)  # appends
    assert _rows(spark, spec, "seeded") == sorted([(1,)], key=repr)  # once
    history = spark.sql(f"DESCRIBE HISTORY delta.`{spec.tables_dir / 'eu_sales'}`").orderBy("version").collect()
    last = history[-1]  # the second update's replace: one commit that deletes and inserts
    assert last.operation == "WRITE" and "region" in last.operationParameters["predicate"]
    assert last.operationMetrics["numDeletedRows"] == "2" and last.operationMetrics["numOutputRows"] == "2"


def test_replace_where_predicate_must_be_boolean(spark: SparkSession, tmp_path: Path) -> None:
    spec = make_pipeline(tmp_path, {"bad.sql": BAD})
    result = run_update(spec, UpdateOptions(), spark=spark)
    assert not result.succeeded
    error = result.flow("t").error
    assert error is not None and error.code == "REPLACE_WHERE_NOT_BOOLEAN"
    assert "'t'" in str(error) and "bad.sql:2" in str(error) and "amount + 1" in str(error)

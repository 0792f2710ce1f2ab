"""Issue 36's defects found in real SQL pipelines, in one pipeline run (two updates): the alias after
``STREAM(t) f`` / ``STREAM t AS f`` in joins, subqueries and CTEs; ``_metadata`` of ``STREAM read_files``;
column-level informational constraints; a materialized view's declared column list kept through refreshes;
a column's ``DEFAULT expr`` filled in where the query leaves the column out."""

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
CREATE OR REFRESH STREAMING TABLE facts AS
SELECT *, _metadata.file_name AS source_file FROM STREAM read_files('{landing}', format => 'json');

CREATE OR REFRESH MATERIALIZED VIEW customers (
  customer_id BIGINT NOT NULL PRIMARY KEY COMMENT 'the key',
  region BIGINT CONSTRAINT fk_region FOREIGN KEY REFERENCES ref.regions (id) NOT ENFORCED,
  name STRING COMMENT 'display name',
  tier STRING NOT NULL DEFAULT upper('gold') COMMENT 'a DEFAULT the query leaves to the table'
) AS SELECT CAST(customer_id AS BIGINT) AS customer_id, CAST(region AS BIGINT) AS region, name
FROM VALUES (1, 10, 'ann'), (2, 20, 'bob') AS c(customer_id, region, name);

CREATE OR REFRESH STREAMING TABLE joined AS
SELECT f.customer_id, c.name, f.source_file FROM STREAM(facts) f LEFT JOIN LIVE.customers c
ON c.customer_id = f.customer_id;

CREATE OR REFRESH STREAMING TABLE joined_as AS
SELECT f.customer_id, c.name FROM STREAM facts AS f JOIN customers AS c ON c.customer_id = f.customer_id;

CREATE OR REFRESH STREAMING TABLE from_cte AS
WITH s AS (SELECT f.customer_id AS k FROM STREAM(LIVE.facts) AS f) SELECT s.k FROM s;

CREATE OR REFRESH STREAMING TABLE from_subquery AS
SELECT q.k FROM (SELECT f.customer_id AS k FROM STREAM facts f WHERE f.customer_id > 1) q;

CREATE OR REFRESH STREAMING TABLE files_aliased AS
SELECT r._metadata.file_name AS file FROM STREAM read_files('{landing}', format => 'json') AS r;
"""


def _rows(spark: SparkSession, spec: object, table: str) -> list[tuple[object, ...]]:
    df = spark.read.format("delta").load(str(spec.tables_dir / table))  # type: ignore[attr-defined]
    return sorted((tuple(r) for r in df.collect()), key=repr)


def test_stream_aliases_metadata_and_column_constraints(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"customer_id": 1}', '{"customer_id": 2}'])
    spec = make_pipeline(tmp_path, {"defects.sql": SQL.format(landing=landing)})
    first = run_update(spec, UpdateOptions(), spark=spark)
    assert first.succeeded, first.error or [f.error for f in first.flows]
    write_json_lines(landing, "b.json", ['{"customer_id": 3}'])
    second = run_update(spec, UpdateOptions(), spark=spark)
    assert second.succeeded, second.error or [f.error for f in second.flows]

    assert _rows(spark, spec, "joined") == [(1, "ann", "a.json"), (2, "bob", "a.json"), (3, None, "b.json")]
    assert _rows(spark, spec, "joined_as") == [(1, "ann"), (2, "bob")]
    assert _rows(spark, spec, "from_cte") == [(1,), (2,), (3,)]
    assert _rows(spark, spec, "from_subquery") == [(2,), (3,)]
    assert _rows(spark, spec, "files_aliased") == [("a.json",), ("a.json",), ("b.json",)]
    facts = spark.read.format("delta").load(str(spec.tables_dir / "facts"))
    assert "_metadata" not in facts.columns and "source_file" in facts.columns

    schema = spark.read.format("delta").load(str(spec.tables_dir / "customers")).schema
    assert [(f.name, f.dataType.simpleString(), f.nullable, f.metadata.get("comment")) for f in schema.fields] == [
        ("customer_id", "bigint", False, "the key"), ("region", "bigint", True, None),
        ("name", "string", True, "display name"),
        ("tier", "string", False, "a DEFAULT the query leaves to the table")]
    assert {r.tier for r in spark.read.format("delta").load(str(spec.tables_dir / "customers")).collect()} == {"GOLD"}

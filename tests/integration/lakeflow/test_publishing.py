"""Issue 36: the default publishing mode and Unity Catalog names. A pipeline with ``catalog: main`` and
``schema: sales`` reads spec tables named in two catalogs (``main.ref.regions``, ``dev.ref.regions``, a CSV
``ref.codes``) through ``spark.read.table``, ``spark.sql`` and SQL, and publishes datasets to its own schema, to
another schema (``reporting.by_region``) and to another catalog (``dev.marts.regions_seen``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.runner.update import UpdateOptions, run_update
from framework.spec import parse_spec
from tests.integration.runner.pipeline_factory import write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PYTHON = """
from pyspark import pipelines as dp

@dp.materialized_view
def orders():
    return spark.createDataFrame([(1, 10), (2, 20), (3, 10)], "id BIGINT, region BIGINT")

@dp.materialized_view(name="reporting.by_region")
def by_region():
    regions = spark.sql("SELECT id AS region, name FROM main.ref.regions")
    return spark.read.table("orders").join(regions, "region").groupBy("name").count()

@dp.materialized_view(name="dev.marts.regions_seen")
def regions_seen():
    dev = spark.read.table("dev.ref.regions").withColumnRenamed("name", "dev_name")
    codes = spark.table("ref.codes")
    return spark.read.table("main.reporting.by_region").crossJoin(dev.limit(1)).crossJoin(codes)
"""

SQL = """
CREATE OR REFRESH MATERIALIZED VIEW totals AS
SELECT count(*) AS n FROM sales.orders o JOIN main.ref.regions r ON o.region = r.id;
"""


def _spec(tmp_path: Path, spark: SparkSession) -> object:
    for name, rows in (("main_regions", [(10, "eu"), (20, "us")]), ("dev_regions", [(10, "dev-eu")])):
        spark.createDataFrame(rows, "id BIGINT, name STRING").write.format("delta").save(str(tmp_path / name))
    write_json_lines(tmp_path / "codes", "codes.csv", ["code,label", "x,ex"])
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "flows.py").write_text(PYTHON)
    (tmp_path / "pipeline" / "totals.sql").write_text(SQL)
    raw = {"name": "publishing", "libraries": [{"glob": {"include": "pipeline/**"}}], "storage": "storage",
           "catalog": "main", "schema": "sales",
           "tables": {"main.ref.regions": {"path": str(tmp_path / "main_regions")},
                      "dev.ref.regions": {"path": str(tmp_path / "dev_regions")},
                      "ref.codes": {"format": "csv", "path": str(tmp_path / "codes"),
                                    "options": {"header": "true"}}}}
    return parse_spec(raw, source=str(tmp_path / "spec.yaml"), default_root=tmp_path)


def test_default_publishing_mode_with_three_part_names(spark: SparkSession, tmp_path: Path) -> None:
    spec = _spec(tmp_path, spark)
    result = run_update(spec, UpdateOptions(), spark=spark)  # type: ignore[arg-type]
    assert result.succeeded, result.error or [f.error for f in result.flows]

    # published where their names say; the pipeline's catalog is the session catalog under its name
    assert sorted(tuple(r) for r in spark.read.table("main.reporting.by_region").collect()) == [("eu", 2), ("us", 1)]
    assert spark.read.table("reporting.by_region").count() == 2
    assert spark.read.table("main.sales.orders").count() == 3 and spark.read.table("sales.orders").count() == 3
    assert spark.sql("SELECT n FROM main.sales.totals").collect()[0][0] == 3
    seen = spark.sql("SELECT dev_name, label FROM dev.marts.regions_seen").collect()
    assert sorted(tuple(r) for r in seen) == [("dev-eu", "ex"), ("dev-eu", "ex")]
    # another catalog's schema is its own: dev.ref is not main.ref, and marts exists only in dev
    assert spark.sql("SELECT name FROM dev.ref.regions").collect()[0][0] == "dev-eu"
    assert not spark.catalog.tableExists("main.marts.regions_seen")
    assert [r[0] for r in spark.sql("SHOW SCHEMAS IN dev").collect()] == ["marts", "ref"]
    assert spark.sql("SHOW TABLES IN dev.marts").collect()[0]["tableName"] == "regions_seen"

    created = _create_update(spec)
    assert created["effective_publishing_mode"] == "DEFAULT_PUBLISHING_MODE"


def test_legacy_target_is_the_legacy_publishing_mode(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "t.sql").write_text("CREATE OR REFRESH MATERIALIZED VIEW a AS SELECT 1 AS x;\n"
                                                 "CREATE OR REFRESH MATERIALIZED VIEW b AS SELECT * FROM LIVE.a;\n")
    raw = {"name": "legacy", "libraries": [{"glob": {"include": "pipeline/**"}}], "storage": "storage",
           "target": "legacy_it"}
    spec = parse_spec(raw, source=str(tmp_path / "spec.yaml"), default_root=tmp_path)
    result = run_update(spec, UpdateOptions(), spark=spark)
    assert result.succeeded, result.error
    assert spark.read.table("legacy_it.b").collect()[0][0] == 1
    assert _create_update(spec)["effective_publishing_mode"] == "LEGACY_PUBLISHING_MODE"


def _create_update(spec: object) -> dict[str, object]:
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    assert spark is not None
    log = spark.read.format("delta").load(str(spec.storage / "system" / "events"))  # type: ignore[attr-defined]
    rows = log.where("event_type = 'create_update'").orderBy("timestamp").collect()
    details = json.loads(rows[-1]["details"])
    return dict(details["create_update"])


PYTHON_SQL = """
from pyspark import pipelines as dp

@dp.materialized_view
def orders():
    return spark.createDataFrame([(1, {n}), (2, {n})], "id BIGINT, n BIGINT")

@dp.materialized_view
def bare():
    return spark.sql("SELECT sum(n) AS total FROM orders")

@dp.materialized_view
def qualified():
    return spark.sql("SELECT o.id, o.n FROM main.sales.orders o WHERE o.id = 1")
"""


def test_spark_sql_in_a_query_function_reads_the_pipeline_dataset(spark: SparkSession, tmp_path: Path) -> None:
    """``spark.sql`` naming a dataset without ``LIVE.`` depends on it and reads this update's rows, not the table
    the previous update published (which a plain catalog lookup would find)."""
    (tmp_path / "pipeline").mkdir()
    raw = {"name": "sql_reads", "libraries": [{"glob": {"include": "pipeline/**"}}], "storage": "storage",
           "catalog": "main", "schema": "sales"}
    spec = parse_spec(raw, source=str(tmp_path / "spec.yaml"), default_root=tmp_path)
    for n in (1, 5):
        (tmp_path / "pipeline" / "p.py").write_text(PYTHON_SQL.format(n=n))
        result = run_update(spec, UpdateOptions(), spark=spark)
        assert result.succeeded, result.error or [f.error for f in result.flows]
        assert spark.read.table("sales.bare").collect()[0][0] == 2 * n
        assert [tuple(r) for r in spark.read.table("main.sales.qualified").collect()] == [(1, n)]


USE_SQL = """
CREATE OR REFRESH MATERIALIZED VIEW base AS SELECT 1 AS x;
USE SCHEMA reporting;
CREATE OR REFRESH MATERIALIZED VIEW r1 AS SELECT x + 1 AS y FROM sales.base;
CREATE OR REFRESH MATERIALIZED VIEW r2 AS SELECT y * 10 AS z FROM r1;
CREATE TEMPORARY VIEW tv AS SELECT z FROM r2;
CREATE OR REFRESH MATERIALIZED VIEW r3 AS SELECT * FROM tv;
USE CATALOG dev;
CREATE OR REFRESH MATERIALIZED VIEW d1 AS SELECT * FROM main.reporting.r3;
USE SCHEMA dev.marts;
CREATE OR REFRESH MATERIALIZED VIEW d2 AS SELECT z + 1 AS z FROM default.d1;
"""


def test_use_schema_and_use_catalog_scope_the_statements_after_them(spark: SparkSession, tmp_path: Path) -> None:
    """As on Databricks: after ``USE SCHEMA s`` / ``USE CATALOG c`` (whose schema is ``default``) a statement's
    unqualified names, declared and read, are in that schema; a temporary view belongs to no schema."""
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "use.sql").write_text(USE_SQL)
    raw = {"name": "use_scope", "libraries": [{"glob": {"include": "pipeline/**"}}], "storage": "storage",
           "catalog": "main", "schema": "sales"}
    spec = parse_spec(raw, source=str(tmp_path / "spec.yaml"), default_root=tmp_path)
    result = run_update(spec, UpdateOptions(), spark=spark)
    assert result.succeeded, result.error or [f.error for f in result.flows]
    assert sorted(f.target for f in result.flows) == ["base", "dev.default.d1", "dev.marts.d2", "reporting.r1",
                                                      "reporting.r2", "reporting.r3", "tv"]
    values = {name: spark.read.table(name).collect()[0][0] for name in
              ("sales.base", "main.reporting.r1", "reporting.r2", "reporting.r3", "dev.default.d1", "dev.marts.d2")}
    assert values == {"sales.base": 1, "main.reporting.r1": 2, "reporting.r2": 20, "reporting.r3": 20,
                      "dev.default.d1": 20, "dev.marts.d2": 21}


JDBC_PYTHON = """
from pyspark import pipelines as dp

@dp.materialized_view
def regions_python():
    return spark.read.table("ops.ref.regions").where("id > 1")

@dp.materialized_view
def regions_sql():
    return spark.sql("SELECT name FROM ops.ref.regions WHERE id = 1")
"""


def test_a_jdbc_table_in_another_catalog_is_read(spark: SparkSession, tmp_path: Path) -> None:
    """A spec ``tables:`` entry with ``format: jdbc`` named in a catalog other than the pipeline's reads through
    the catalog plugin (Spark's V2 JDBC table over the same options), in Python and SQL; here over an in-memory
    Derby database, whose driver comes with pyspark."""
    url = f"jdbc:derby:memory:uc36_{tmp_path.name};create=true"
    spark.createDataFrame([(1, "eu"), (2, "us"), (3, "apac")], "ID INT, NAME STRING").write.jdbc(url, "REGIONS")
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "flows.py").write_text(JDBC_PYTHON)
    (tmp_path / "pipeline" / "counted.sql").write_text(
        "CREATE OR REFRESH MATERIALIZED VIEW counted AS SELECT count(*) AS n FROM ops.ref.regions;\n")
    raw = {"name": "jdbc_catalog", "libraries": [{"glob": {"include": "pipeline/**"}}], "storage": "storage",
           "catalog": "main", "schema": "sales",
           "tables": {"ops.ref.regions": {"format": "jdbc", "url": url, "dbtable": "REGIONS",
                                          "driver": "org.apache.derby.jdbc.EmbeddedDriver"}}}
    spec = parse_spec(raw, source=str(tmp_path / "spec.yaml"), default_root=tmp_path)
    result = run_update(spec, UpdateOptions(), spark=spark)
    assert result.succeeded, result.error or [f.error for f in result.flows]
    assert sorted(r[1] for r in spark.read.table("sales.regions_python").collect()) == ["apac", "us"]
    assert spark.read.table("sales.regions_sql").collect()[0][0] == "eu"
    assert spark.read.table("sales.counted").collect()[0][0] == 3
    assert spark.sql("SELECT name FROM ops.ref.regions WHERE id = 2").collect()[0][0] == "us"  # after the run

"""Materialized views over small inputs are recomputed through the driver (framework/storage/overwrites.py): the table is
the same Delta table Spark would have written (rows, schema changes, comment and properties, expectation
metrics, history), and views the driver must not write still go through Spark."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from framework.runner.update import UpdateOptions, UpdateResult, run_update
from framework.spec import PipelineSpec
from framework.storage.driver import ENGINE_INFO
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

pytestmark = pytest.mark.spark

VIEWS = """
import dlt
from pyspark.sql import functions as F

@dlt.table
def orders():
    return spark.readStream.format("json").schema("id bigint, country string, amount double").load(
        spark.conf.get("landing"))

@dlt.table(comment="revenue per country", table_properties={"myteam.owner": "x"})
@dlt.expect_or_drop("known_country", "country IS NOT NULL")
def by_country():
    return (dlt.read("orders").groupBy("country")
            .agg(F.count("*").alias("orders"), F.sum("amount").alias("revenue"), F.max("id").alias(spark.conf.get("col"))))

@dlt.table(partition_cols=["country"])
def partitioned():
    return dlt.read("orders").select("country", "id")
"""


def _update(spec: PipelineSpec, spark: SparkSession) -> UpdateResult:
    result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert result.succeeded, (result.error, [(f.flow, f.error) for f in result.flows if f.error])
    return result


def _engines(path: Path) -> list[Any]:
    commits = sorted((path / "_delta_log").glob("*.json"))
    return [json.loads(c.read_text().splitlines()[0])["commitInfo"].get("engineInfo", "") for c in commits]


def test_small_views_are_written_by_the_driver_as_spark_would(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id":1,"country":"NL","amount":2.5}',
                                         '{"id":2,"country":"BE","amount":1.0}', '{"id":3,"amount":9.0}'])
    spec = make_pipeline(tmp_path, {"p.py": VIEWS}, {"landing": str(landing), "col": "last_id"})
    first = _update(spec, spark)
    view = spec.tables_dir / "by_country"
    rows = {r.country: (r.orders, r.revenue, r.last_id) for r in spark.read.format("delta").load(str(view)).collect()}
    assert rows == {"NL": (1, 2.5, 1), "BE": (1, 1.0, 2)}  # the group without a country dropped
    flow = {f.flow: f for f in first.flows}["by_country"]
    assert (flow.num_output_rows, flow.dropped_records) == (2, 1)
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{view}`").first()
    assert detail.description == "revenue per country" and detail.properties.get("myteam.owner") == "x"
    write_json_lines(landing, "b.json", ['{"id":4,"country":"NL","amount":0.5}'])
    spec = make_pipeline(tmp_path, {"p.py": VIEWS}, {"landing": str(landing), "col": "newest_id"})  # schema change
    _update(spec, spark)
    table = spark.read.format("delta").load(str(view))
    assert table.columns == ["country", "orders", "revenue", "newest_id"]
    assert {r.country: (r.orders, r.revenue, r.newest_id) for r in table.collect()} == {
        "NL": (2, 3.0, 4), "BE": (1, 1.0, 2)}
    assert all(e.startswith("medallion-framework") for e in _engines(view))  # every commit by the driver
    history = spark.sql(f"DESCRIBE HISTORY delta.`{view}`").orderBy("version").collect()
    assert [h.operationParameters["mode"] for h in history] == ["Overwrite", "Overwrite"]
    assert spark.read.format("delta").option("versionAsOf", 0).load(str(view)).count() == 2  # time travel
    partitioned = spec.tables_dir / "partitioned"
    assert all(e.startswith("Apache-Spark") for e in _engines(partitioned))  # a layout only Spark writes
    assert spark.sql(f"DESCRIBE DETAIL delta.`{partitioned}`").first().partitionColumns == ["country"]


def test_a_view_whose_table_has_deletion_vectors_goes_through_spark(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id":1,"country":"NL","amount":2.5}'])
    # recomputed every update (an incremental refresh of the changed groups is Spark's replaceWhere)
    full = "from pyspark import pipelines as dp\n" + VIEWS.replace(
        '@dlt.table(comment="revenue per country"', '@dp.materialized_view(comment="revenue per country", '
        'refresh_policy="full"')
    spec = make_pipeline(tmp_path, {"p.py": full}, {"landing": str(landing), "col": "last_id"})
    _update(spec, spark)
    view = spec.tables_dir / "by_country"
    spark.sql(f"ALTER TABLE delta.`{view}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    write_json_lines(landing, "b.json", ['{"id":2,"country":"BE","amount":1.0}'])
    _update(spec, spark)
    assert _engines(view)[-1] == ENGINE_INFO  # the feature alone: no file has a deletion vector to keep
    spark.sql(f"DELETE FROM delta.`{view}` WHERE country = 'BE'")  # now one file has one
    write_json_lines(landing, "c.json", ['{"id":3,"country":"FR","amount":1.0}'])
    _update(spec, spark)
    assert _engines(view)[-1].startswith("Apache-Spark")
    assert sorted(r.country for r in spark.read.format("delta").load(str(view)).collect()) == ["BE", "FR", "NL"]


def test_a_views_reads_of_small_tables_see_exactly_the_live_files(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id":1,"country":"NL","amount":2.5}',
                                         '{"id":2,"country":"BE","amount":1.0}'])
    spec = make_pipeline(tmp_path, {"p.py": VIEWS}, {"landing": str(landing), "col": "last_id"})
    _update(spec, spark)
    orders = spec.tables_dir / "orders"
    spark.sql(f"DELETE FROM delta.`{orders}` WHERE id = 1")  # a remove (and a rewritten file) in the log
    write_json_lines(landing, "b.json", ['{"id":3,"country":"NL","amount":4.0}'])
    _update(spec, spark)
    view = spark.read.format("delta").load(str(spec.tables_dir / "by_country"))
    assert {r.country: (r.orders, r.last_id) for r in view.collect()} == {"NL": (1, 3), "BE": (1, 2)}


def test_live_files_replayed_on_the_driver_are_sparks(spark: SparkSession, tmp_path: Path) -> None:
    from framework.storage.log import checkpoint_version, live_files
    from framework.storage.plain import pinned_parquet

    path = str(tmp_path / "t")
    for i in range(12):  # Delta checkpoints version 10
        spark.range(i * 10, i * 10 + 10).write.format("delta").mode("append").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 10 = 0")
    assert checkpoint_version(path)[1] == 10
    files = live_files(path)
    assert files is not None
    expected = {Path(f.replace("file://", "").replace("file:", "")).name
                for f in spark.read.format("delta").load(path).inputFiles()}
    assert {Path(p).name for p in files} == expected
    pinned = pinned_parquet(spark, path, 1 << 30)
    assert pinned is not None
    assert sorted(r.id for r in pinned.collect()) == sorted(i for i in range(120) if i % 10)
    assert pinned_parquet(spark, path, 10) is None  # over the size limit: read through Delta
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    # the feature alone changes nothing: no file has a deletion vector yet
    with_feature = pinned_parquet(spark, path, 1 << 30)
    assert with_feature is not None and sorted(r.id for r in with_feature.collect()) == sorted(r.id for r in pinned.collect())
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 11")  # now one does
    assert pinned_parquet(spark, path, 1 << 30) is None  # read through Delta

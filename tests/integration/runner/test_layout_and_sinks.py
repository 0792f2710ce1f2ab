"""Sinks receive appends (Delta sinks by path or table name, foreach_batch sinks), and tables honour their
declared layout: partition_cols, cluster_by, table_properties, comment, path and schema."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from framework.errors import DeclarationError
from framework.runner.update import UpdateOptions, UpdateResult, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.spec import PipelineSpec

pytestmark = pytest.mark.spark

SCHEMA = "id bigint, country string"


def _update(spec: PipelineSpec, spark: SparkSession, **options: Any) -> UpdateResult:
    result = run_update(spec, UpdateOptions(out=io.StringIO(), **options), spark=spark)
    assert result.succeeded, (result.error, [(f.flow, f.error) for f in result.flows if f.error])
    return result


def _ids(spark: SparkSession, path: Path | str) -> list[int]:
    return sorted(r.id for r in spark.read.format("delta").load(str(path)).select("id").collect())


def _detail(spark: SparkSession, path: Path | str) -> Any:
    from delta.tables import DeltaTable

    return DeltaTable.forPath(spark, str(path)).detail().first()


def _version(spark: SparkSession, path: Path | str) -> int:
    from delta.tables import DeltaTable

    return int(DeltaTable.forPath(spark, str(path)).history(1).first().version)


def _landing(tmp_path: Path) -> Path:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id":1,"country":"NL"}', '{"id":2,"country":"BE"}'])
    return landing


def _run_twice(spark: SparkSession, tmp_path: Path, filename: str, source: str) -> PipelineSpec:
    """Write the pipeline, run an update, land one more file, run another (appends and recomputes)."""
    landing = _landing(tmp_path)
    spec = make_pipeline(tmp_path, {filename: source}, {"landing": str(landing)})
    _update(spec, spark)
    write_json_lines(landing, "b.json", ['{"id":3,"country":"DE"}'])
    _update(spec, spark)
    return spec


# --------------------------------------------------------------------------------------------------- sinks
DELTA_SINK_BY_PATH = """
import dlt

dlt.create_sink("orders_sink", "delta", {"path": spark.conf.get("sink_path")})

@dlt.append_flow(name="orders_to_sink", target="orders_sink")
def orders_to_sink():
    return spark.readStream.format("json").schema("id bigint, country string").load(spark.conf.get("landing"))
"""


def test_delta_sink_by_path_receives_only_new_rows(spark, tmp_path: Path) -> None:
    landing, sink = _landing(tmp_path), tmp_path / "external" / "orders_sink"
    spec = make_pipeline(tmp_path, {"sink.py": DELTA_SINK_BY_PATH},
                         {"landing": str(landing), "sink_path": str(sink)})
    first = _update(spec, spark)
    assert first.flow("orders_to_sink").num_input_rows == 2
    assert _ids(spark, sink) == [1, 2]
    assert not (spec.tables_dir / "orders_sink").exists()  # a sink is not a pipeline table

    write_json_lines(landing, "b.json", ['{"id":3,"country":"NL"}'])
    second = _update(spec, spark)
    assert second.flow("orders_to_sink").num_input_rows == 1
    assert _ids(spark, sink) == [1, 2, 3]  # only the new row was appended

    version = _version(spark, sink)
    idle = _update(spec, spark)
    assert idle.flow("orders_to_sink").num_input_rows == 0
    assert _ids(spark, sink) == [1, 2, 3] and _version(spark, sink) == version  # a no-op update appends nothing


DELTA_SINK_BY_TABLE_NAME = """
from pyspark import pipelines as dp

dp.create_sink(name="orders_sink", format="delta", options={"tableName": spark.conf.get("sink_table")})

@dp.append_flow(target="orders_sink")
def orders_to_sink():
    return spark.readStream.format("json").schema("id bigint, country string").load(spark.conf.get("landing"))
"""


def test_delta_sink_by_table_name_appends_to_an_existing_table(spark, tmp_path: Path) -> None:
    landing, location = _landing(tmp_path), tmp_path / "external" / "orders"
    database = "it_sink_" + tmp_path.name.replace("-", "_")[-20:]
    table = f"{database}.orders_ext"
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
    spark.sql(f"CREATE TABLE {table} (id BIGINT, country STRING) USING DELTA LOCATION '{location}'")
    try:
        spec = make_pipeline(tmp_path, {"sink.py": DELTA_SINK_BY_TABLE_NAME},
                             {"landing": str(landing), "sink_table": table})
        _update(spec, spark)
        assert sorted(r.id for r in spark.read.table(table).collect()) == [1, 2]
        write_json_lines(landing, "b.json", ['{"id":3,"country":"DE"}'])
        _update(spec, spark)
        _update(spec, spark)  # nothing new
        rows = spark.read.table(table).orderBy("id").collect()
        assert [(r.id, r.country) for r in rows] == [(1, "NL"), (2, "BE"), (3, "DE")]
        assert _ids(spark, location) == [1, 2, 3]
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql(f"DROP DATABASE IF EXISTS {database}")


FOREACH_BATCH_SINK = """
from pyspark import pipelines as dp

OUT = spark.conf.get("out_path")
LOG = spark.conf.get("batch_log")

@dp.foreach_batch_sink(name="audit_sink")
def audit(df, batch_id):
    df.write.format("delta").mode("append").save(OUT)
    with open(LOG, "a") as handle:
        handle.write(f"{batch_id}:{df.count()}\\n")

@dp.append_flow(target="audit_sink", name="orders_to_audit")
def orders_to_audit():
    return spark.readStream.format("json").schema("id bigint, country string").load(spark.conf.get("landing"))
"""


def test_foreach_batch_sink_receives_each_micro_batch(spark, tmp_path: Path) -> None:
    landing, out, log = _landing(tmp_path), tmp_path / "audit", tmp_path / "batches.log"
    spec = make_pipeline(tmp_path, {"audit.py": FOREACH_BATCH_SINK},
                         {"landing": str(landing), "out_path": str(out), "batch_log": str(log)})
    first = _update(spec, spark)
    assert first.flow("orders_to_audit").num_input_rows == 2
    assert log.read_text().splitlines() == ["0:2"]
    assert _ids(spark, out) == [1, 2]

    write_json_lines(landing, "b.json", ['{"id":3,"country":"NL"}', '{"id":4,"country":"FR"}'])
    _update(spec, spark)
    assert log.read_text().splitlines() == ["0:2", "1:2"]  # the checkpoint carries on: batch 1, new rows only
    assert _ids(spark, out) == [1, 2, 3, 4]

    _update(spec, spark)
    assert log.read_text().splitlines() == ["0:2", "1:2"]  # no new input: the handler is not called


def test_foreach_batch_sink_bare_decorator_names_the_sink_after_the_function(spark, tmp_path: Path) -> None:
    landing, log = _landing(tmp_path), tmp_path / "batches.log"
    spec = make_pipeline(tmp_path, {"audit.py": """
        import dlt

        @dlt.foreach_batch_sink
        def record_batches(df, batch_id):
            ids = ",".join(str(r.id) for r in df.orderBy("id").collect())
            with open(spark.conf.get("batch_log"), "a") as handle:
                handle.write(f"{batch_id}:{ids}\\n")

        @dlt.append_flow(target="record_batches")
        def feed():
            return spark.readStream.format("json").schema("id bigint, country string").load(
                spark.conf.get("landing"))
    """}, {"landing": str(landing), "batch_log": str(log)})
    _update(spec, spark)
    assert log.read_text().splitlines() == ["0:1,2"]


# -------------------------------------------------------------------------------------------------- layout
PARTITIONED = """
import dlt
from pyspark import pipelines as dp

@dlt.table(partition_cols=["country"], table_properties={"myteam.owner": "x"})  # properties set after the first write
def orders():
    return spark.readStream.format("json").schema("id bigint, country string").load(spark.conf.get("landing"))

@dp.materialized_view(partition_cols=["country"])
def orders_per_country():
    return spark.read.table("orders").groupBy("country").count()

dlt.create_streaming_table("orders_copy", partition_cols=["country"])

@dlt.append_flow(target="orders_copy")
def copy_orders():
    return spark.readStream.table("orders")
"""


def test_partition_cols_on_streaming_tables_and_materialized_views(spark, tmp_path: Path) -> None:
    spec = _run_twice(spark, tmp_path, "p.py", PARTITIONED)  # appends and the recompute keep the layout
    for name in ("orders", "orders_per_country", "orders_copy"):
        path = spec.tables_dir / name
        assert _detail(spark, path).partitionColumns == ["country"], name
        assert (path / "country=DE").is_dir(), name
    assert _ids(spark, spec.tables_dir / "orders_copy") == [1, 2, 3]
    counts = {r.country: r["count"] for r in spark.read.table(f"{spec.schema}.orders_per_country").collect()}
    assert counts == {"NL": 1, "BE": 1, "DE": 1}


CLUSTERED = """
import dlt
from pyspark import pipelines as dp

@dlt.table(cluster_by=["id"], comment="clustered orders", table_properties={"myteam.owner": "x"})
def orders():
    return spark.readStream.format("json").schema("id bigint, country string").load(spark.conf.get("landing"))

@dp.materialized_view(cluster_by=["country"])
def countries():
    return spark.read.table("orders").select("country").distinct()
"""


def test_cluster_by_on_streaming_table_and_materialized_view(spark, tmp_path: Path) -> None:
    spec = _run_twice(spark, tmp_path, "c.py", CLUSTERED)  # a second append and a recompute keep the clustering
    orders = _detail(spark, spec.tables_dir / "orders")
    assert (orders.clusteringColumns, orders.partitionColumns) == (["id"], [])
    assert orders.description == "clustered orders"
    assert orders.properties.get("myteam.owner") == "x"
    assert _ids(spark, spec.tables_dir / "orders") == [1, 2, 3]
    countries = _detail(spark, spec.tables_dir / "countries")
    assert countries.clusteringColumns == ["country"]
    assert sorted(r.country for r in spark.read.table(f"{spec.schema}.countries").collect()) == ["BE", "DE", "NL"]


def test_cluster_by_with_partition_cols_is_refused(spark, tmp_path: Path) -> None:
    spec = make_pipeline(tmp_path, {"bad.py": """
        import dlt

        @dlt.table(cluster_by=["id"], partition_cols=["country"])
        def orders():
            return spark.createDataFrame([(1, "NL")], "id bigint, country string")
    """})
    result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert not result.succeeded
    assert isinstance(result.error, DeclarationError)
    message = str(result.error)
    assert "partition_cols and cluster_by cannot be used together" in message and "bad.py" in message
    assert not (spec.tables_dir / "orders").exists()


PROPERTIES = """
import dlt
from pyspark import pipelines as dp

PROPS = {"delta.appendOnly": "false", "myteam.owner": "x"}

@dlt.table(comment="orders as they arrive", table_properties={**PROPS, "delta.enableChangeDataFeed": "true"})
def orders():
    return spark.readStream.format("json").schema("id bigint, country string").load(spark.conf.get("landing"))

@dp.materialized_view(comment="one row per country", table_properties=PROPS)
def countries():
    return spark.read.table("orders").select("country").distinct()
"""


def test_table_properties_and_comment(spark, tmp_path: Path) -> None:
    spec = _run_twice(spark, tmp_path, "p.py", PROPERTIES)  # properties and comment survive appends and recomputes
    for name, comment in (("orders", "orders as they arrive"), ("countries", "one row per country")):
        path = spec.tables_dir / name
        detail = _detail(spark, path)
        assert detail.description == comment, name
        assert detail.properties.get("delta.appendOnly") == "false", name
        assert detail.properties.get("myteam.owner") == "x", name
        props = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {spec.schema}.{name}").collect()}
        assert props.get("delta.appendOnly") == "false" and props.get("myteam.owner") == "x", name
        described = spark.sql(f"DESCRIBE DETAIL {spec.schema}.{name}").first()
        assert described.description == comment, name
    # the properties are in place from the first commit: the change feed covers the first batch too
    changes = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0)
               .load(str(spec.tables_dir / "orders")).where("_change_type = 'insert'"))
    assert sorted(r.id for r in changes.collect()) == [1, 2, 3]


def test_path_writes_the_table_where_declared(spark, tmp_path: Path) -> None:
    landing, custom = _landing(tmp_path), tmp_path / "elsewhere" / "orders"
    spec = make_pipeline(tmp_path, {"p.py": """
        import dlt

        @dlt.table(path=spark.conf.get("orders_path"), comment="at a path of its own")
        def orders():
            return spark.readStream.format("json").schema("id bigint, country string").load(
                spark.conf.get("landing"))

        @dlt.table
        def order_count():
            return spark.read.table("LIVE.orders").groupBy().count()
    """}, {"landing": str(landing), "orders_path": str(custom)})
    _update(spec, spark)
    write_json_lines(landing, "b.json", ['{"id":3,"country":"DE"}'])
    _update(spec, spark)
    assert (custom / "_delta_log").is_dir()
    assert not (spec.tables_dir / "orders").exists()
    assert _ids(spark, custom) == [1, 2, 3]
    assert sorted(r.id for r in spark.read.table(f"{spec.schema}.orders").collect()) == [1, 2, 3]
    assert spark.read.table(f"{spec.schema}.order_count").first()[0] == 3  # readers follow the path too
    detail = spark.sql(f"DESCRIBE DETAIL {spec.schema}.orders").first()
    assert detail.location.rstrip("/").endswith(str(custom))
    assert detail.description == "at a path of its own"


SCHEMA_DECLARED = """
import dlt
from pyspark import pipelines as dp

@dlt.table(schema="id BIGINT, name STRING")
def people():
    return spark.readStream.format("json").schema("name string, id int").load(spark.conf.get("landing"))

@dp.materialized_view(schema="id BIGINT, name STRING")
def people_snapshot():
    return spark.createDataFrame([("ann", 1)], "name string, id int")
"""


def test_declared_schema_sets_the_table_columns(spark, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id":1,"name":"ann"}', '{"id":2,"name":"bob"}'])
    spec = make_pipeline(tmp_path, {"p.py": SCHEMA_DECLARED}, {"landing": str(landing)})
    _update(spec, spark)
    for name in ("people", "people_snapshot"):
        df = spark.read.format("delta").load(str(spec.tables_dir / name))
        assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
            ("id", "bigint"), ("name", "string")], name
    assert [(r.id, r.name) for r in spark.read.table(f"{spec.schema}.people").orderBy("id").collect()] == [
        (1, "ann"), (2, "bob")]


def test_query_output_that_does_not_fit_the_declared_schema_fails_the_flow(spark, tmp_path: Path) -> None:
    spec = make_pipeline(tmp_path, {"p.py": """
        import dlt

        @dlt.table(schema="id BIGINT, name STRING")
        def people():
            return spark.createDataFrame([("1", "ann", 7)], "id string, name string, age int")

        @dlt.table(schema="id BIGINT, name STRING")
        def fine():
            return spark.createDataFrame([(1, "ann")], "id int, name string")
    """})
    result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert not result.succeeded
    assert result.flow("fine").status == "COMPLETED"  # independent flows still run
    error = result.flow("people").error
    assert getattr(error, "code", None) == "USER_SPECIFIED_AND_INFERRED_SCHEMA_NOT_COMPATIBLE"
    message = str(error)
    assert "'id' is string in the query but declared bigint" in message
    assert "returns column 'age'" in message and "p.py" in message
    assert not (spec.tables_dir / "people").exists()


CDC_PROPERTIES = """
import dlt
from pyspark.sql.functions import col

dlt.create_streaming_table("dim", comment="one row per id, with history", table_properties={"quality": "gold"})
dlt.apply_changes(target="dim", source="changes", keys=["id"], sequence_by=col("seq"), stored_as_scd_type=2)

@dlt.view
def changes():
    return spark.readStream.format("json").schema("id bigint, country string, seq bigint").load(
        spark.conf.get("landing"))
"""


def test_apply_changes_targets_get_their_comment_and_properties(spark, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id":1,"country":"NL","seq":1}', '{"id":2,"country":"BE","seq":1}'])
    spec = make_pipeline(tmp_path, {"cdc.py": CDC_PROPERTIES}, {"landing": str(landing)})
    _update(spec, spark)
    path = spec.tables_dir / "dim"
    detail = _detail(spark, path)
    assert detail.description == "one row per id, with history"
    assert detail.properties.get("quality") == "gold"
    assert detail.properties.get("delta.enableDeletionVectors") == "true"  # set by the append that created it
    version = _version(spark, path)
    write_json_lines(landing, "b.json", ['{"id":1,"country":"DE","seq":2}'])
    _update(spec, spark)
    assert _version(spark, path) == version + 1  # the MERGE only: the properties are not set again
    assert spark.read.format("delta").load(str(path)).where("__END_AT IS NULL AND id = 1").first().country == "DE"

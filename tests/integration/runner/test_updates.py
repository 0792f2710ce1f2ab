"""Updates end to end: streaming tables are incremental, materialized views recompute, views are not stored,
the event log has Databricks' shape, names resolve the way pipelines write them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from framework.runner.update import UpdateOptions, run_update
from framework.sqlcompat import translate_databricks_sql
from framework.testing import assert_df_equal
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

pytestmark = pytest.mark.spark

PIPELINE = """
import dlt
from pyspark.sql import functions as F

@dlt.table(comment="raw orders", table_properties={"quality": "bronze"})
@dlt.expect_or_drop("positive_amount", "amount > 0")
@dlt.expect("small_amount", "amount < 100")
def orders_raw():
    return spark.readStream.format("json").schema("id bigint, amount double").load(spark.conf.get("landing"))

@dlt.view
def big_orders():
    return dlt.read_stream("LIVE.orders_raw").where("amount > 10")

@dlt.table
def big_orders_copy():
    return dlt.read_stream("big_orders")

@dlt.table
def totals():
    return spark.read.table("orders_raw").groupBy().agg(F.count("*").alias("n"), F.sum("amount").alias("total"))
"""


FIRST_BATCH = '{"id":1,"amount":5}\n{"id":2,"amount":-1}\n{"id":3,"amount":500}\n'


@pytest.fixture
def orders_folder(tmp_path: Path) -> Path:
    """The pipeline as a folder of files, for the test kit's run_pipeline."""
    folder = tmp_path / "orders_pipeline"
    folder.mkdir()
    (folder / "orders.py").write_text(PIPELINE)
    return folder


@pytest.fixture
def pipeline(tmp_path: Path):
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id":1,"amount":5}', '{"id":2,"amount":-1}', '{"id":3,"amount":500}'])
    spec = make_pipeline(tmp_path, {"orders.py": PIPELINE}, {"landing": str(landing)})
    return spec, landing


def test_incremental_update_and_event_log(spark, run_pipeline, orders_folder: Path) -> None:
    first = run_pipeline(orders_folder, configuration={"landing": "{inputs}"}, inputs={"a.json": FIRST_BATCH})
    spec = first.spec
    assert first.succeeded, first.error
    raw = first.flow("orders_raw")
    assert (raw.rows_in, raw.rows_out, raw.dropped) == (3, 2, 1)
    by_name = raw.expectations
    assert (by_name["positive_amount"].passed_records, by_name["positive_amount"].failed_records) == (2, 1)
    assert (by_name["small_amount"].passed_records, by_name["small_amount"].failed_records) == (2, 1)
    assert first.result.kinds == {"orders_raw": "streaming_table", "big_orders": "view",
                                  "big_orders_copy": "streaming_table", "totals": "materialized_view"}
    assert not (spec.tables_dir / "big_orders").exists()  # views are not stored

    second = first.run_again(inputs={"b.json": '{"id":4,"amount":50}\n'})
    assert second.succeeded, second.error
    assert second.flow("orders_raw").rows_in == 1  # only the new file
    assert second.flow("big_orders_copy").rows_out == 1
    assert_df_equal(second.table("orders_raw").select("id"), [(1,), (3,), (4,)])
    assert sorted(second.tables) == ["big_orders_copy", "orders_raw", "totals"]
    assert spark.read.table(f"{spec.schema}.totals").first().asDict() == {"n": 3, "total": 555.0}
    assert spark.sql(f"SELECT count(*) FROM delta.`{spec.tables_dir}/big_orders_copy`").first()[0] == 2
    props = spark.sql(f"SHOW TBLPROPERTIES delta.`{spec.tables_dir}/orders_raw`").collect()
    assert {r.key: r.value for r in props}.get("quality") == "bronze"

    events = spark.read.format("delta").load(str(spec.events_dir))
    types = {r.event_type for r in events.select("event_type").distinct().collect()}
    assert {"create_update", "flow_definition", "flow_progress", "update_progress"} <= types
    definition = events.where("event_type = 'flow_definition' AND origin.flow_name = 'big_orders_copy'").first()
    assert json.loads(definition.details)["flow_definition"]["input_datasets"] == ["big_orders"]

    # Databricks' own data-quality monitoring query, unchanged (from_json + explode over expectations).
    dq = spark.sql(translate_databricks_sql(f"""
        SELECT row_expectations.dataset AS dataset, row_expectations.name AS expectation,
               SUM(row_expectations.passed_records) AS passing_records,
               SUM(row_expectations.failed_records) AS failing_records
        FROM (
          SELECT explode(from_json(details:flow_progress:data_quality:expectations,
                 "array<struct<name: string, dataset: string, passed_records: int, failed_records: int>>"))
                 AS row_expectations
          FROM delta.`{spec.events_dir}` WHERE event_type = 'flow_progress'
            AND origin.update_id = '{first.result.update_id}')
        GROUP BY row_expectations.dataset, row_expectations.name ORDER BY expectation""")).collect()
    assert [(r.dataset, r.expectation, r.passing_records, r.failing_records) for r in dq] == [
        ("orders_raw", "positive_amount", 2, 1), ("orders_raw", "small_amount", 2, 1)]


def test_full_refresh_then_incremental(run_pipeline, orders_folder: Path) -> None:
    first = run_pipeline(orders_folder, configuration={"landing": "{inputs}"}, inputs={"a.json": FIRST_BATCH})
    assert first.succeeded, first.error
    refreshed = first.run_again(full_refresh=True)
    assert refreshed.succeeded, refreshed.error
    assert refreshed.flow("orders_raw").rows_in == 3  # everything reprocessed
    after = refreshed.run_again(inputs={"c.json": '{"id":9,"amount":9}\n'})
    assert after.flow("orders_raw").rows_in == 1
    # no duplicates from the pre-refresh run, and the new row was not ignored
    assert_df_equal(after.table("orders_raw").select("id"), [(1,), (3,), (9,)])


def test_refresh_selection_only_touches_selected(spark, pipeline) -> None:
    spec, _landing = pipeline
    assert run_update(spec, UpdateOptions(), spark=spark).succeeded
    selected = run_update(spec, UpdateOptions(refresh_selection=("totals",)), spark=spark)
    statuses = {f.flow: f.status for f in selected.flows}
    assert statuses["totals"] == "COMPLETED"
    assert statuses["orders_raw"] == "EXCLUDED"
    unknown = run_update(spec, UpdateOptions(refresh_selection=("totalz",)), spark=spark)
    assert not unknown.succeeded and "Did you mean 'totals'" in str(unknown.error)


DOWNSTREAM = """
import dlt

@dlt.table
def orders():
    return spark.readStream.format("json").schema("id bigint, amount double").load(spark.conf.get("landing"))

@dlt.table
def orders_copy():
    return dlt.read_stream("orders")
"""


def test_a_new_downstream_stream_reads_the_upstream_table_as_it_is(spark, tmp_path: Path) -> None:
    """A stream that starts fresh (its checkpoint cleared) reads the upstream table's current rows: through
    its change history when the table was only appended to, through its snapshot after a delete."""
    from delta.tables import DeltaTable

    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id":1,"amount":10}', '{"id":2,"amount":20}'])
    spec = make_pipeline(tmp_path, {"p.py": DOWNSTREAM}, {"landing": str(landing)})
    assert run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark).succeeded
    write_json_lines(landing, "b.json", ['{"id":3,"amount":30}'])
    assert run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark).succeeded
    copy = spec.tables_dir / "orders_copy"

    def ids() -> list[int]:
        return sorted(r.id for r in spark.read.format("delta").load(str(copy)).collect())

    refreshed = run_update(spec, UpdateOptions(out=io.StringIO(), full_refresh_selection=("orders_copy",)),
                           spark=spark)
    assert refreshed.succeeded and ids() == [1, 2, 3]
    DeltaTable.forPath(spark, str(spec.tables_dir / "orders")).delete("id = 2")  # history is no longer appends
    refreshed = run_update(spec, UpdateOptions(out=io.StringIO(), full_refresh_selection=("orders_copy",)),
                           spark=spark)
    assert refreshed.succeeded and ids() == [1, 3]


SETTINGS_SEEN = """
import dlt

@dlt.table
def totals():
    with open(spark.conf.get("seen"), "a") as log:  # called when the graph is resolved, then by the flow
        log.write(spark.conf.get("spark.sql.codegen.wholeStage", "true") + "\\n")
    orders = spark.read.format("json").schema("id bigint, amount double").load(spark.conf.get("landing"))
    return orders.selectExpr("sum(amount) AS total")
"""


def test_small_updates_run_their_flows_with_the_small_update_settings(spark, tmp_path: Path) -> None:
    landing, seen = tmp_path / "landing", tmp_path / "seen.txt"
    write_json_lines(landing, "a.json", ['{"id":1,"amount":10}'])
    spec = make_pipeline(tmp_path, {"p.py": SETTINGS_SEEN}, {"landing": str(landing), "seen": str(seen)})
    before = spark.conf.get("spark.sql.codegen.wholeStage", None)
    out = io.StringIO()
    result = run_update(spec, UpdateOptions(out=out), spark=spark)
    assert result.succeeded and result.small_update is not None and "< 64.0 MiB" in result.small_update
    assert "small update (inputs" in out.getvalue()
    assert seen.read_text().split() == [before or "true", "false"]  # resolution, then the flow
    assert spark.conf.get("spark.sql.codegen.wholeStage", None) == before  # the session's own again
    assert spark.read.table(f"{spec.schema}.totals").first().total == 10


def test_an_input_of_unknown_size_makes_a_normal_update(spark, tmp_path: Path) -> None:
    spark.range(3).write.format("delta").save(str(tmp_path / "ext"))
    spark.sql(f"CREATE TABLE IF NOT EXISTS default.small_updates_ext USING DELTA LOCATION '{tmp_path / 'ext'}'")
    try:
        spec = make_pipeline(tmp_path, {"p.py": """
            import dlt

            @dlt.table
            def copy():
                return spark.read.table("default.small_updates_ext")
        """})
        result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
        assert result.succeeded and result.small_update is None
    finally:
        spark.sql("DROP TABLE IF EXISTS default.small_updates_ext")


PUBLISHED = """
import dlt

@dlt.table
def numbers():
    return spark.range(3)
"""


def test_tables_are_published_unless_the_in_memory_catalog_ends_with_the_update(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ending = make_pipeline(tmp_path / "ending", {"p.py": PUBLISHED})
    result = run_update(ending, UpdateOptions(out=io.StringIO(), session_ends_with_update=True), spark=spark)
    assert result.succeeded, result.error
    assert spark.read.format("delta").load(str(ending.tables_dir / "numbers")).count() == 3
    assert not spark.catalog.tableExists(f"{ending.schema}.numbers")  # a one-shot `medallion run`'s catalog
    kept = make_pipeline(tmp_path / "kept", {"p.py": PUBLISHED})
    assert run_update(kept, UpdateOptions(out=io.StringIO()), spark=spark).succeeded
    assert spark.table(f"{kept.schema}.numbers").count() == 3

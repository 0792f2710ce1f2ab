"""APPLY CHANGES and snapshot CDC run through the runner: pipeline files written with the decorators, one update
after another (SEMANTICS.md §3, §4 and the event log of §6)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from framework.runner.update import UpdateOptions, UpdateResult, run_update
from framework.spec import PipelineSpec
from framework.sqlcompat import translate_databricks_sql
from tests.integration.cdc.helpers import ordered
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

pytestmark = pytest.mark.spark

CHANGES_SCHEMA = "id INT, name STRING, op STRING, seq INT"

# A streaming view over a landing folder of change events, shared by the pipelines below.
FEED = """
import dlt

@dlt.view
def changes():
    return spark.readStream.format("json").schema("{schema}").load(spark.conf.get("landing"))
""".replace("{schema}", CHANGES_SCHEMA)

LEGACY_SCD1 = """
import dlt
from pyspark.sql.functions import col, expr

dlt.create_streaming_table("users")
dlt.apply_changes(target="users", source="changes", keys=["id"], sequence_by=col("seq"),
                  apply_as_deletes=expr("op = 'DELETE'"), except_column_list=["op", "seq"],
                  flow_name="users_cdc")
"""

DP_SCD2 = """
from pyspark import pipelines as dp
from pyspark.sql.functions import expr

dp.create_streaming_table("users_history")
dp.create_auto_cdc_flow(target="users_history", source="changes", keys=["id"], sequence_by="seq",
                        apply_as_deletes=expr("op = 'DELETE'"), except_column_list=["op", "seq"],
                        stored_as_scd_type="2", name="users_history_cdc")
"""


def change(id: int, name: str | None, seq: int, op: str = "UPSERT") -> str:
    return json.dumps({"id": id, "name": name, "op": op, "seq": seq})


def run(spark: SparkSession, spec: PipelineSpec, **options: Any) -> UpdateResult:
    result = run_update(spec, UpdateOptions(**options), spark=spark)
    assert result.succeeded, [(f.flow, f.error) for f in result.flows if f.error is not None] or result.error
    return result


def target_rows(spark: SparkSession, spec: PipelineSpec, name: str) -> list[tuple[Any, ...]]:
    return ordered([tuple(r) for r in spark.read.format("delta").load(str(spec.tables_dir / name)).collect()])


def table_version(spark: SparkSession, spec: PipelineSpec, name: str) -> int:
    return int(spark.sql(f"DESCRIBE HISTORY delta.`{spec.tables_dir / name}`").agg({"version": "max"}).first()[0])


def events_of(spark: SparkSession, spec: PipelineSpec, update_id: str, event_type: str) -> list[Any]:
    return (spark.read.format("delta").load(str(spec.events_dir))
            .where(f"origin.update_id = '{update_id}' AND event_type = '{event_type}'").collect())


def test_flow_names_metrics_and_scd2_from_string(spark: SparkSession, tmp_path: Path) -> None:
    """`flow_name=` (dlt) and `name=` (dp) name the flows in the event log; `stored_as_scd_type="2"` keeps
    history; flow_progress carries num_upserted_rows / num_deleted_rows (3 upserts, 1 delete)."""
    landing = tmp_path / "landing"
    write_json_lines(landing, "1.json", [change(1, "a", 1), change(2, "b", 1), change(3, "c", 1)])
    spec = make_pipeline(tmp_path, {"feed.py": FEED, "scd1.py": LEGACY_SCD1, "scd2.py": DP_SCD2},
                         {"landing": str(landing)})
    first = run(spark, spec)
    write_json_lines(landing, "2.json", [change(1, "a2", 2), change(4, "d", 2), change(5, "e", 2),
                                         change(2, None, 3, "DELETE")])
    second = run(spark, spec)

    assert target_rows(spark, spec, "users") == [(1, "a2"), (3, "c"), (4, "d"), (5, "e")]
    history = spark.read.format("delta").load(str(spec.tables_dir / "users_history"))
    assert history.columns == ["id", "name", "__START_AT", "__END_AT"]
    assert target_rows(spark, spec, "users_history") == [
        (1, "a", 1, 2), (1, "a2", 2, None), (2, "b", 1, 3), (3, "c", 1, None), (4, "d", 2, None), (5, "e", 2, None)]

    definitions = {r.origin.flow_name: (r.origin.dataset_name, json.loads(r.details)["flow_definition"])
                   for r in events_of(spark, spec, first.update_id, "flow_definition")}
    assert definitions["users_cdc"][0] == "users"
    assert definitions["users_cdc"][1]["output_dataset"] == "users"
    assert definitions["users_cdc"][1]["input_datasets"] == ["changes"]
    assert definitions["users_history_cdc"][1]["output_dataset"] == "users_history"
    assert "users" not in definitions and "users_history" not in definitions  # the names given, not the targets
    completed = {r.origin.flow_name for r in events_of(spark, spec, second.update_id, "flow_progress")
                 if json.loads(r.details)["flow_progress"]["status"] == "COMPLETED"}
    assert {"users_cdc", "users_history_cdc"} <= completed

    # The metrics as a monitoring query reads them: from_json over `details`.
    metrics = spark.sql(f"""
        SELECT origin.update_id AS update_id, origin.flow_name AS flow_name, fp.flow_progress.metrics AS m
        FROM (SELECT origin, from_json(details, 'flow_progress STRUCT<status: STRING, metrics: STRUCT<
                     num_upserted_rows: BIGINT, num_deleted_rows: BIGINT, num_output_rows: BIGINT>>') AS fp
              FROM delta.`{spec.events_dir}` WHERE event_type = 'flow_progress')
        WHERE fp.flow_progress.status = 'COMPLETED' AND origin.flow_name = 'users_cdc'""").collect()
    by_update = {r.update_id: (r.m.num_upserted_rows, r.m.num_deleted_rows, r.m.num_output_rows) for r in metrics}
    assert by_update == {first.update_id: (3, 0, None), second.update_id: (3, 1, None)}
    # ... and with Databricks' JSON path syntax
    path_query = spark.sql(translate_databricks_sql(f"""
        SELECT CAST(details:flow_progress.metrics.num_upserted_rows AS BIGINT) AS upserted,
               CAST(details:flow_progress.metrics.num_deleted_rows AS BIGINT) AS deleted
        FROM delta.`{spec.events_dir}` WHERE event_type = 'flow_progress'
          AND origin.flow_name = 'users_cdc' AND origin.update_id = '{second.update_id}'
          AND details:flow_progress.status = 'COMPLETED'""")).collect()
    assert [(r.upserted, r.deleted) for r in path_query] == [(3, 1)]
    assert second.flow("users_history_cdc").num_deleted_rows == 1


def test_once_apply_changes_runs_again_only_after_full_refresh(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "1.json", [change(1, "a", 1), change(2, "b", 1)])
    spec = make_pipeline(tmp_path, {"p.py": f"""
        import dlt

        @dlt.view
        def backfill_source():
            return spark.read.format("json").schema("{CHANGES_SCHEMA}").load(spark.conf.get("landing"))

        dlt.create_streaming_table("users")
        dlt.apply_changes(target="users", source="backfill_source", keys=["id"], sequence_by="seq",
                          except_column_list=["op", "seq"], flow_name="backfill", once=True)
    """}, {"landing": str(landing)})
    first = run(spark, spec)
    assert first.flow("backfill").num_upserted_rows == 2
    assert target_rows(spark, spec, "users") == [(1, "a"), (2, "b")]

    write_json_lines(landing, "2.json", [change(1, "a2", 2), change(3, "c", 1)])
    second = run(spark, spec)
    assert not second.flow("backfill").num_upserted_rows
    assert target_rows(spark, spec, "users") == [(1, "a"), (2, "b")]  # new source data, yet not run again

    refreshed = run(spark, spec, full_refresh=True)
    assert refreshed.flow("backfill").num_upserted_rows == 3
    assert target_rows(spark, spec, "users") == [(1, "a2"), (2, "b"), (3, "c")]
    definition = next(r for r in events_of(spark, spec, first.update_id, "flow_definition")
                      if r.origin.flow_name == "backfill")
    assert json.loads(definition.details)["flow_definition"]["once"] is True


def test_declared_schema_with_scd2_columns(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "1.json", [change(1, "a", 1), change(1, "b", 2), change(2, "c", 1),
                                         change(2, None, 5, "DELETE")])
    spec = make_pipeline(tmp_path, {"feed.py": FEED, "p.py": """
        import dlt

        dlt.create_streaming_table("users", schema="id INT, name STRING, __START_AT BIGINT, __END_AT BIGINT")
        dlt.apply_changes(target="users", source="changes", keys=["id"], sequence_by="seq",
                          apply_as_deletes="op = 'DELETE'", except_column_list=["op", "seq"],
                          stored_as_scd_type=2)
    """}, {"landing": str(landing)})
    run(spark, spec)
    df = spark.read.format("delta").load(str(spec.tables_dir / "users"))
    assert df.dtypes == [("id", "int"), ("name", "string"), ("__START_AT", "bigint"), ("__END_AT", "bigint")]
    assert target_rows(spark, spec, "users") == [(1, "a", 1, 2), (1, "b", 2, None), (2, "c", 1, 5)]


SNAPSHOTS = """
import json
from pathlib import Path

import dlt

STATE = Path(spark.conf.get("snapshot_file"))

def next_snapshot_and_version(latest_version):
    snapshot = json.loads(STATE.read_text())
    if latest_version is not None and latest_version == snapshot["version"]:
        return None
    return spark.createDataFrame(snapshot["rows"], "id INT, value STRING"), snapshot["version"]

dlt.create_streaming_table("customers")
dlt.apply_changes_from_snapshot(target="customers", source=next_snapshot_and_version, keys=["id"],
                                stored_as_scd_type=2)
"""


def test_snapshot_version_that_does_not_increase_fails_the_flow(spark: SparkSession, tmp_path: Path) -> None:
    snapshot_file = tmp_path / "snapshot.json"
    snapshot_file.write_text(json.dumps({"version": 2, "rows": [[1, "a"], [2, "b"]]}))
    spec = make_pipeline(tmp_path, {"p.py": SNAPSHOTS}, {"snapshot_file": str(snapshot_file)})
    assert run(spark, spec).flow("customers").num_upserted_rows == 2
    before = target_rows(spark, spec, "customers")
    assert before == [(1, "a", 2, None), (2, "b", 2, None)]
    version = table_version(spark, spec, "customers")

    snapshot_file.write_text(json.dumps({"version": 1, "rows": [[1, "x"]]}))  # older than the last one (2)
    result = run_update(spec, UpdateOptions(), spark=spark)
    assert not result.succeeded
    flow = result.flow("customers")
    assert flow.status == "FAILED"
    message = str(flow.error)
    assert "Versions must increase" in message and "version 1 is not greater than" in message
    assert "'customers'" in message
    assert target_rows(spark, spec, "customers") == before
    assert table_version(spark, spec, "customers") == version
    failed = [json.loads(r.details)["flow_progress"]["status"]
              for r in events_of(spark, spec, result.update_id, "flow_progress") if r.origin.flow_name == "customers"]
    assert "FAILED" in failed


def test_changing_keys_is_refused_until_full_refresh(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "1.json", [change(1, "a", 1), change(2, "a", 2)])
    cdc = """
        import dlt

        dlt.create_streaming_table("users")
        dlt.apply_changes(target="users", source="changes", keys={keys}, sequence_by="seq",
                          except_column_list=["op", "seq"])
    """
    spec = make_pipeline(tmp_path, {"feed.py": FEED, "p.py": cdc.replace("{keys}", '["id"]')},
                         {"landing": str(landing)})
    run(spark, spec)
    version = table_version(spark, spec, "users")

    spec = make_pipeline(tmp_path, {"feed.py": FEED, "p.py": cdc.replace("{keys}", '["name"]')},
                         {"landing": str(landing)})
    refused = run_update(spec, UpdateOptions(), spark=spark)
    assert not refused.succeeded
    error = refused.flow("users").error
    assert getattr(error, "code", None) == "INCOMPATIBLE_CHANGE_REQUIRES_FULL_REFRESH"
    assert "keys changed from ['id'] to ['name']" in str(error) and "full refresh" in str(error)
    assert table_version(spark, spec, "users") == version

    run(spark, spec, full_refresh=True)
    rows = spark.read.format("delta").load(str(spec.tables_dir / "users")).collect()
    assert [r.asDict() for r in rows] == [{"id": 2, "name": "a"}]  # one row per name, the latest sequence wins

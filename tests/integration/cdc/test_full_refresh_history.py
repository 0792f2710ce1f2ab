"""A full refresh of APPLY CHANGES and snapshot targets keeps their Delta history (issue 39), as for every other
table (``tests/integration/runner/test_full_refresh_history.py``): Databricks' full refresh "truncates the
streaming table, removes all checkpoint data, and restarts the streaming process" (``ldp/full-refresh-st``).
The target and the Delta tables of its hidden state are truncated by one commit each, and their first write
replaces them with the new definition's columns; the content is that of a fresh run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from framework.runner.update import UpdateOptions, UpdateResult, run_update
from framework.spec import PipelineSpec
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

pytestmark = pytest.mark.spark

PIPELINE = """
import json
from pathlib import Path

import dlt
from pyspark.sql.functions import col, expr

@dlt.view
def changes():
    return (spark.readStream.format("json").schema("id INT, name STRING, op STRING, seq INT")
            .load(spark.conf.get("landing")))

dlt.create_streaming_table("users")
dlt.apply_changes(target="users", source="changes", keys=["id"], sequence_by=col("seq"),
                  apply_as_deletes=expr("op = 'DELETE'"), except_column_list=EXCEPT)

dlt.create_streaming_table("users_history")
dlt.apply_changes(target="users_history", source="changes", keys=["id"], sequence_by=col("seq"),
                  apply_as_deletes=expr("op = 'DELETE'"), except_column_list=EXCEPT, stored_as_scd_type=2)

STATE = Path(spark.conf.get("snapshot_file"))

def next_snapshot_and_version(latest_version):
    snapshot = json.loads(STATE.read_text())
    if latest_version is not None and latest_version >= snapshot["version"]:
        return None
    return spark.createDataFrame(snapshot["rows"], "id INT, value STRING"), snapshot["version"]

dlt.create_streaming_table("customers")
dlt.apply_changes_from_snapshot(target="customers", source=next_snapshot_and_version, keys=["id"],
                                stored_as_scd_type=2)
"""
BEFORE = PIPELINE.replace("EXCEPT", '["op", "seq"]')
AFTER = PIPELINE.replace("EXCEPT", '["op"]')  # the new definition keeps seq: a column more
TARGETS = ("users", "users_history", "customers")


def change(id: int, name: str | None, seq: int, op: str = "UPSERT") -> str:
    return json.dumps({"id": id, "name": name, "op": op, "seq": seq})


def _run(spark: SparkSession, spec: PipelineSpec, **options: Any) -> UpdateResult:
    result = run_update(spec, UpdateOptions(**options), spark=spark)
    assert result.succeeded, [(f.flow, f.error) for f in result.flows if f.error is not None] or result.error
    return result


def _tables(spec: PipelineSpec) -> dict[str, Path]:
    """Every Delta table of the targets: the targets and their hidden state tables."""
    found = {name: spec.tables_dir / name for name in TARGETS}
    for state in sorted((spec.storage / "system" / "apply_changes").glob("*/*/_delta_log")):
        found[f"{state.parent.parent.name}/{state.parent.name}"] = state.parent
    return found


def _versions(spark: SparkSession, path: Path) -> list[int]:
    return sorted(int(r.version) for r in spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version").collect())


def _content(spark: SparkSession, path: Path) -> tuple[list[str], list[str]]:
    df = spark.read.format("delta").load(str(path))
    return df.columns, sorted(map(repr, df.collect()))


def _pipeline(root: Path, code: str, landing: Path, snapshot: Path) -> PipelineSpec:
    return make_pipeline(root, {"p.py": code}, {"landing": str(landing), "snapshot_file": str(snapshot)})


def test_full_refresh_of_cdc_targets_continues_their_history(spark: SparkSession, tmp_path: Path) -> None:
    landing, snapshot = tmp_path / "landing", tmp_path / "snapshot.json"
    write_json_lines(landing, "1.json", [change(1, "a", 1), change(2, "b", 1), change(3, "c", 1)])
    snapshot.write_text(json.dumps({"version": 1, "rows": [[1, "x"], [2, "y"]]}))
    spec = _pipeline(tmp_path / "p", BEFORE, landing, snapshot)
    _run(spark, spec)
    write_json_lines(landing, "2.json", [change(1, "a2", 2), change(2, None, 3, "DELETE")])
    snapshot.write_text(json.dumps({"version": 2, "rows": [[1, "x2"], [3, "z"]]}))
    _run(spark, spec)
    tables = _tables(spec)
    assert "users_history/tombstones" in tables
    before = {name: _versions(spark, path) for name, path in tables.items()}
    old = {name: _content(spark, path) for name, path in tables.items()}

    spec = _pipeline(tmp_path / "p", AFTER, landing, snapshot)  # same storage root, the new definition
    _run(spark, spec, full_refresh=True)
    fresh = _pipeline(tmp_path / "fresh", AFTER, landing, snapshot)
    _run(spark, fresh)
    for name, path in _tables(spec).items():
        versions = _versions(spark, path)
        if name in before:  # the history goes on, and its old versions still read the old rows
            assert versions[: len(before[name])] == before[name] and len(versions) > len(before[name]), name
            old_rows = spark.read.format("delta").option("versionAsOf", before[name][-1]).load(str(path))
            assert sorted(map(repr, old_rows.collect())) == old[name][1], name
    for name in TARGETS:
        assert _content(spark, spec.tables_dir / name) == _content(spark, fresh.tables_dir / name), name
    assert "seq" in _content(spark, spec.tables_dir / "users")[0]

    write_json_lines(landing, "3.json", [change(3, "c2", 4), change(1, None, 5, "DELETE")])
    for target in (spec, fresh):
        _run(spark, target)
    for name in TARGETS:  # the refreshed targets go on as a fresh run's do
        assert _content(spark, spec.tables_dir / name) == _content(spark, fresh.tables_dir / name), name

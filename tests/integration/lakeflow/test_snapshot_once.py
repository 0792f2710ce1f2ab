"""Issue 36: a one-time AUTO CDC FROM SNAPSHOT flow, ``create_auto_cdc_from_snapshot_flow(..., once=True)`` as
Databricks' reference documents it and SQL's ``AUTO CDC ONCE INTO t FROM SNAPSHOT s`` (its ONCE was read and
dropped): the snapshot is applied in the first update only, and again after a full refresh."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.runner.update import UpdateOptions, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PYTHON = """
from pyspark import pipelines as dp

@dp.materialized_view
def src():
    return spark.read.format("json").schema("id BIGINT, v STRING").load(spark.conf.get("landing"))

dp.create_streaming_table("py_dim")
dp.create_auto_cdc_from_snapshot_flow(target="py_dim", source="src", keys=["id"], once=True)
"""

SQL = """
CREATE OR REFRESH STREAMING TABLE sql_dim;
CREATE FLOW sql_dim_flow AS AUTO CDC ONCE INTO sql_dim FROM SNAPSHOT src KEYS (id) STORED AS SCD TYPE 1;
"""


def _rows(spark: SparkSession, spec: object, table: str) -> list[tuple[object, ...]]:
    df = spark.read.format("delta").load(str(spec.tables_dir / table))  # type: ignore[attr-defined]
    return sorted(tuple(r) for r in df.select("id", "v").collect())


def test_a_once_snapshot_flow_runs_once_until_a_full_refresh(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id": 1, "v": "a"}', '{"id": 2, "v": "b"}'])
    spec = make_pipeline(tmp_path, {"p.py": PYTHON, "q.sql": SQL}, {"landing": str(landing)})
    first = run_update(spec, UpdateOptions(), spark=spark)
    assert first.succeeded, first.error or [f.error for f in first.flows]
    for table in ("py_dim", "sql_dim"):
        assert _rows(spark, spec, table) == [(1, "a"), (2, "b")]

    (landing / "a.json").unlink()
    write_json_lines(landing, "b.json", ['{"id": 2, "v": "b2"}', '{"id": 3, "v": "c"}'])
    second = run_update(spec, UpdateOptions(), spark=spark)
    assert second.succeeded, second.error or [f.error for f in second.flows]
    for table in ("py_dim", "sql_dim"):
        assert _rows(spark, spec, table) == [(1, "a"), (2, "b")]  # once: the new snapshot is not applied

    refreshed = run_update(spec, UpdateOptions(full_refresh=True), spark=spark)
    assert refreshed.succeeded, refreshed.error or [f.error for f in refreshed.flows]
    for table in ("py_dim", "sql_dim"):
        assert _rows(spark, spec, table) == [(2, "b2"), (3, "c")]

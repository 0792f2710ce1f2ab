"""A once flow killed between its commit and its ``once.done`` marker: the rerun sees its own committed ``txn``,
writes nothing again, and finishes (it used to wait forever for the expectation Observation of a write that Delta
skipped as already committed)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from framework.runner.update import UpdateOptions, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def test_a_once_flow_committed_without_its_marker_finishes_once(spark: SparkSession, tmp_path: Path) -> None:
    write_json_lines(tmp_path / "old", "part.json", ['{"id": 0}', '{"id": 1}'])
    spec = make_pipeline(tmp_path, {"flows.sql": f"""
        CREATE OR REFRESH STREAMING TABLE backfilled;
        CREATE FLOW backfill AS INSERT INTO ONCE backfilled BY NAME
        SELECT CAST(id AS BIGINT) AS id FROM read_files('{tmp_path / "old"}', format => 'json');
    """})
    first = run_update(spec, UpdateOptions(), spark=spark)
    assert first.succeeded, first.error
    markers = list(tmp_path.rglob("once.done"))
    assert len(markers) == 1
    markers[0].unlink()  # what a kill -9 right after the flow's commit leaves
    second = run_update(spec, UpdateOptions(), spark=spark)
    assert second.succeeded, second.error
    assert second.flow("backfill").num_output_rows == 0
    table = spark.read.format("delta").load(str(next(p.parent for p in tmp_path.rglob("_delta_log")
                                                     if "backfilled" in str(p.parent))))
    assert sorted(r.id for r in table.collect()) == [0, 1]  # written once
    assert list(tmp_path.rglob("once.done"))  # and marked done this time

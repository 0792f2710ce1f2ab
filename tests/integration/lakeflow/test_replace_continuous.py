"""Issue 36: REPLACE flows in continuous mode. A REPLACE WHERE flow (a batch query into a streaming table) is
refreshed as a materialized view is, when an input has a new version, at its interval (it ran once and never
again before); a REPLACE USING flow is a stream with the run's processing-time trigger, each micro-batch one
MERGE. Both pick up source changes while the update runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.storage.log import has_commit
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines
from tests.integration.runner.test_continuous import _Continuous, _wait_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PIPELINE = """
from pyspark import pipelines as dp

@dp.materialized_view
def sales():
    return spark.read.format("json").schema("id BIGINT, region STRING, amount BIGINT").load(
        spark.conf.get("landing"))

@dp.table(replace_where="region = 'eu'")
def eu_sales():
    return spark.read.table("sales")

dp.create_streaming_table("latest")

@dp.replace_flow(target="latest", replace_using=["id"], sequence_by="seq")
def latest_flow():
    return spark.readStream.format("json").schema("id BIGINT, seq BIGINT, v STRING").load(spark.conf.get("snaps"))
"""


def test_replace_flows_keep_running_in_continuous_mode(spark: SparkSession, tmp_path: Path) -> None:
    landing, snaps = tmp_path / "landing", tmp_path / "snaps"
    write_json_lines(landing, "a.json", ['{"id": 1, "region": "eu", "amount": 5}',
                                         '{"id": 2, "region": "us", "amount": 6}'])
    write_json_lines(snaps, "s1.json", ['{"id": 1, "seq": 1, "v": "a"}', '{"id": 2, "seq": 1, "v": "b"}'])
    spec = make_pipeline(tmp_path, {"p.py": PIPELINE}, {"landing": str(landing), "snaps": str(snaps),
                                                        "pipelines.trigger.interval": "1 second"})

    def rows(table: str) -> list[tuple[object, ...]]:
        path = spec.tables_dir / table
        if not has_commit(path):
            return []
        return sorted(tuple(r) for r in spark.read.format("delta").load(str(path)).collect())

    with _Continuous(spec, spark) as run:
        _wait_for(lambda: rows("eu_sales") == [(1, "eu", 5)])
        _wait_for(lambda: rows("latest") == [(1, 1, "a"), (2, 1, "b")])
        write_json_lines(landing, "b.json", ['{"id": 3, "region": "eu", "amount": 7}'])
        write_json_lines(snaps, "s2.json", ['{"id": 1, "seq": 2, "v": "a2"}', '{"id": 2, "seq": 0, "v": "old"}'])
        _wait_for(lambda: rows("eu_sales") == [(1, "eu", 5), (3, "eu", 7)])  # refreshed while running
        _wait_for(lambda: rows("latest") == [(1, 2, "a2"), (2, 1, "b")])  # a lower sequence is ignored
        assert run.worker.is_alive()
    assert run.result.succeeded, run.result.error or [f.error for f in run.result.flows]
    assert not spark.streams.active

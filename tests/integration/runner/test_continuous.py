"""Continuous mode (issue 20): the update keeps running, new files flow through to the gold table, a stop ends it
with the summary and the event log closed, and the next triggered update continues exactly once."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from framework.runner.delta_log import has_commit
from framework.runner.update import UpdateOptions, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PIPELINE = """
import dlt
from pyspark.sql import functions as F

@dlt.table
def raw():
    return spark.readStream.format("json").schema("id BIGINT, amount DOUBLE").load(spark.conf.get("landing"))

@dlt.table
@dlt.expect_or_drop("positive", "amount > 0")
def clean():
    return dlt.read_stream("raw")

@dlt.table
def total():
    return dlt.read("clean").agg(F.count(F.lit(1)).alias("n"), F.sum("amount").alias("amount"))
"""


def _wait_for(check: Any, seconds: float = 90.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError("the continuous update did not get there in time")


def test_continuous_update_runs_until_stopped_and_the_next_continues(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id": 1, "amount": 5}', '{"id": 2, "amount": -1}'])
    spec = make_pipeline(tmp_path, {"p.py": PIPELINE}, {"landing": str(landing),
                                                        "pipelines.trigger.interval": "1 second"})
    stop = threading.Event()
    box: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: box.update(result=run_update(
        spec, UpdateOptions(continuous=True, stop=stop), spark=spark)))
    worker.start()
    total = spec.tables_dir / "total"

    def total_is(n: int) -> bool:
        if not has_commit(total):
            return False
        rows = spark.read.format("delta").load(str(total)).collect()
        return bool(rows) and rows[0]["n"] == n

    try:
        _wait_for(lambda: total_is(1))  # the triggered pass
        write_json_lines(landing, "b.json", ['{"id": 3, "amount": 7}', '{"id": 4, "amount": 8}'])
        _wait_for(lambda: total_is(3))  # picked up while running: stream, then the view's refresh
        assert worker.is_alive()
    finally:
        stop.set()
        worker.join(timeout=120)
    assert not worker.is_alive()
    result = box["result"]
    assert result.succeeded, result.error or [f.error for f in result.flows]
    assert result.flow("raw").num_output_rows == 4
    assert result.flow("clean").dropped_records == 1
    assert not spark.streams.active  # every query stopped
    events = spark.read.format("delta").load(str(spec.events_dir))
    states = [r.message for r in events.where("event_type = 'update_progress'").orderBy("timestamp").collect()]
    assert states[-1].endswith("is COMPLETED.")

    write_json_lines(landing, "c.json", ['{"id": 5, "amount": 1}'])
    after = run_update(spec, UpdateOptions(), spark=spark)  # triggered: only what came after the stop
    assert after.succeeded and after.flow("raw").num_output_rows == 1
    ids = sorted(r.id for r in spark.read.format("delta").load(str(spec.tables_dir / "raw")).collect())
    assert ids == [1, 2, 3, 4, 5]  # every row exactly once

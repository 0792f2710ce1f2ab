"""Continuous mode (issue 20): the update keeps running, new files flow through to the gold table, a stop ends it
with the summary and the event log closed, and the next triggered update continues exactly once."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from framework.runner.update import UpdateOptions, run_update
from framework.storage.log import has_commit
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


class _Continuous:
    """A continuous update in a thread while the ``with`` block runs; leaving the block stops it (gracefully) and
    waits for its result."""

    def __init__(self, spec: Any, spark: SparkSession) -> None:
        self.stop = threading.Event()
        self.box: dict[str, Any] = {}
        self.worker = threading.Thread(target=lambda: self.box.update(result=run_update(
            spec, UpdateOptions(continuous=True, stop=self.stop), spark=spark)))
        self.worker.start()

    def __enter__(self) -> _Continuous:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.worker.join(timeout=120)
        assert not self.worker.is_alive(), "the continuous update did not stop"

    @property
    def result(self) -> Any:
        return self.box["result"]


def _running(spark: SparkSession, spec: Any, flow: str) -> list[dict[str, Any]]:
    """The details of the flow's RUNNING flow_progress events in the event log so far."""
    if not has_commit(spec.events_dir):
        return []
    events = spark.read.format("delta").load(str(spec.events_dir)).where(
        f"event_type = 'flow_progress' AND origin.flow_name = '{flow}' AND message LIKE '%is RUNNING: %'")
    return [json.loads(r.details)["flow_progress"] for r in events.collect()]


def test_continuous_update_runs_until_stopped_and_the_next_continues(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id": 1, "amount": 5}', '{"id": 2, "amount": -1}'])
    spec = make_pipeline(tmp_path, {"p.py": PIPELINE}, {"landing": str(landing),
                                                        "pipelines.trigger.interval": "1 second",
                                                        "medallion.continuous.progressEventSeconds": "1",
                                                        "medallion.continuous.eventLogCommitSeconds": "2"})
    run = _Continuous(spec, spark)
    total = spec.tables_dir / "total"

    def total_is(n: int) -> bool:
        if not has_commit(total):
            return False
        rows = spark.read.format("delta").load(str(total)).collect()
        return bool(rows) and rows[0]["n"] == n

    with run:
        _wait_for(lambda: total_is(1))  # the triggered pass
        write_json_lines(landing, "b.json", ['{"id": 3, "amount": 7}', '{"id": 4, "amount": 8}'])
        _wait_for(lambda: total_is(3))  # picked up while running: stream, then the view's refresh
        # and the event log gets RUNNING progress of the streams that moved rows (b.json's two rows)
        _wait_for(lambda: sum(d["metrics"].get("num_output_rows", 0) for d in _running(spark, spec, "raw")) == 2)
        assert run.worker.is_alive()
    result = run.result
    assert result.succeeded, result.error or [f.error for f in result.flows]
    assert result.flow("raw").num_output_rows == 4
    assert result.flow("clean").dropped_records == 1
    assert not spark.streams.active  # every query stopped
    events = spark.read.format("delta").load(str(spec.events_dir))
    states = [r.message for r in events.where("event_type = 'update_progress'").orderBy("timestamp").collect()]
    assert states[-1].endswith("is COMPLETED.")
    assert all(d["status"] == "RUNNING" and d["batches"] >= 1 for d in _running(spark, spec, "raw"))

    write_json_lines(landing, "c.json", ['{"id": 5, "amount": 1}'])
    after = run_update(spec, UpdateOptions(), spark=spark)  # triggered: only what came after the stop
    assert after.succeeded and after.flow("raw").num_output_rows == 1
    ids = sorted(r.id for r in spark.read.format("delta").load(str(spec.tables_dir / "raw")).collect())
    assert ids == [1, 2, 3, 4, 5]  # every row exactly once


SLOW = """
import time
import dlt
from pyspark.sql import functions as F

@F.udf("double")
def slowly(amount):
    time.sleep(1.5)
    return amount

@dlt.table
def raw():
    return (spark.readStream.format("json").schema("id BIGINT, amount DOUBLE").load(spark.conf.get("landing"))
            .withColumn("amount", slowly("amount")))
"""


def test_a_stop_lets_the_micro_batch_in_flight_commit(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id": 1, "amount": 5}'])
    spec = make_pipeline(tmp_path, {"p.py": SLOW}, {"landing": str(landing), "pipelines.trigger.interval": "1 second"})
    run = _Continuous(spec, spark)
    checkpoint = spec.checkpoints_dir / "raw" / "raw"
    with run:
        _wait_for(lambda: (checkpoint / "commits" / "0").exists())  # the triggered pass
        write_json_lines(landing, "b.json", ['{"id": 2, "amount": 6}', '{"id": 3, "amount": 7}'])
        in_flight = [b for b in range(1, 5)]
        _wait_for(lambda: any((checkpoint / "offsets" / str(b)).exists() for b in in_flight))
        batch = next(b for b in in_flight if (checkpoint / "offsets" / str(b)).exists())
        assert not (checkpoint / "commits" / str(batch)).exists()  # the batch runs (its rows take 3 s)
    # leaving the block stops the update gracefully: the batch gets its grace period
    assert run.result.succeeded, run.result.error
    assert (checkpoint / "commits" / str(batch)).exists()  # committed, not rolled back
    ids = sorted(r.id for r in spark.read.format("delta").load(str(spec.tables_dir / "raw")).collect())
    assert ids == [1, 2, 3]
    assert run_update(spec, UpdateOptions(), spark=spark).flow("raw").num_output_rows in (0, None)


FILES_VIEW = """
import dlt

@dlt.table
def prices():  # a materialized view over files: the runner cannot see them change, so it refreshes on its interval
    return spark.read.format("json").schema("sku STRING, price DOUBLE").load(spark.conf.get("landing"))
"""


def test_a_view_over_files_refreshes_on_its_interval(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"sku": "x", "price": 1.5}'])
    spec = make_pipeline(tmp_path, {"p.py": FILES_VIEW}, {"landing": str(landing),
                                                          "pipelines.trigger.interval": "1 second"})
    run = _Continuous(spec, spark)
    prices = spec.tables_dir / "prices"
    with run:
        _wait_for(lambda: has_commit(prices))
        write_json_lines(landing, "b.json", ['{"sku": "y", "price": 2.5}'])
        _wait_for(lambda: spark.read.format("delta").load(str(prices)).count() == 2)
    assert run.result.succeeded, run.result.error

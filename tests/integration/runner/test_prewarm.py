"""framework/runner/prewarm.py: the warm engine computes, between commands, the snapshot state the next update's
Delta streaming sink would otherwise compute on its critical path."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from framework.runner import prewarm

pytestmark = [pytest.mark.spark]


def _append_batch(spark: SparkSession, source: Path, table: Path, checkpoint: Path, first: int) -> int:
    """One available-now micro-batch of a Delta-to-Delta stream; the number of Spark jobs it ran."""
    spark.range(first, first + 3).write.format("delta").mode("append").save(str(source))
    query = (spark.readStream.format("delta").load(str(source)).writeStream.format("delta")
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start(str(table)))
    query.awaitTermination()
    return len(spark.sparkContext.statusTracker().getJobIdsForGroup(str(query.runId)))


def test_the_sinks_state_is_computed_between_updates(spark: SparkSession, tmp_path: Path) -> None:
    source, table, checkpoint = tmp_path / "src", tmp_path / "t", tmp_path / "cp"
    for first in (0, 10):  # the first batches start the stream's and the tables' state
        _append_batch(spark, source, table, checkpoint, first)
    cold = _append_batch(spark, source, table, checkpoint, 20)  # the sink computes the table's newest state
    prewarm.note_written([str(table), str(tmp_path / "not-a-table")])
    assert prewarm.warm_written(spark) == 2  # an unreadable path is skipped, not an error
    warmed = _append_batch(spark, source, table, checkpoint, 30)
    assert warmed < cold  # measured: 4 jobs, 1 after the warm-up
    assert sorted(r.id for r in spark.read.format("delta").load(str(table)).collect()) == [
        *range(3), *range(10, 13), *range(20, 23), *range(30, 33)]


def test_a_waiting_command_stops_the_warm_up(spark: SparkSession, tmp_path: Path) -> None:
    prewarm.note_written([str(tmp_path / "a"), str(tmp_path / "b")])
    assert prewarm.warm_written(spark, should_stop=lambda: True) == 0
    prewarm.note_written([str(tmp_path / "c")])  # an update's tables replace the earlier ones
    assert prewarm.warm_written(spark) == 1 and prewarm.warm_written(spark) == 0


def test_a_command_that_arrives_cancels_the_warming_jobs_it_would_wait_for(spark: SparkSession) -> None:
    import threading
    import time

    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    def slow(rows):
        time.sleep(60)
        yield from rows

    finished: list[float] = []

    def warm() -> None:
        started = time.monotonic()
        try:
            with prewarm.warming_jobs(spark):
                spark.sparkContext.parallelize([1], 1).mapPartitions(slow).collect()
        except (Py4JJavaError, PySparkException):
            pass  # cancelled: what the server's warm-up suppresses
        finished.append(time.monotonic() - started)

    thread = threading.Thread(target=warm)
    thread.start()
    deadline = time.monotonic() + 30
    while not spark.sparkContext.statusTracker().getActiveJobsIds() and time.monotonic() < deadline:
        time.sleep(0.05)
    prewarm.cancel_warming(spark)  # what the server does as it accepts a command
    thread.join(timeout=30)
    assert finished and finished[0] < 30  # the 60 s job was cancelled, not waited for
    assert spark.range(3).count() == 3  # this thread's next jobs carry no warming tag: not cancelled

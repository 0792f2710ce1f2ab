"""Two writers commit to one Delta table at once, one through the framework's driver writer
(``framework.storage.driver``, a hard link per commit) and the other through Spark's Delta (the session's LogStore for
``file:`` paths, a hard link too): no commit takes another's version, so no batch is lost (issue 35, "Storage you
can trust": with Delta's LocalLogStore, a check and then a rename, Spark's commit could replace the driver's).

Each test runs for a bounded time: the Spark writer appends as often as it can, the driver writer between
(milliseconds per commit, with random pauses), so that hundreds of driver commits land while Spark's are being
made."""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

from framework.events import EventLog, event_log_schema
from framework.storage.driver import ENGINE_INFO, append_arrow, checkpoint_if_due

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCHEMA = StructType(
    [StructField("writer", StringType()), StructField("batch", LongType()), StructField("row", LongType())]
)
ROWS = 3  # per batch
SECONDS = 60  # of commits of both writers (a Spark append takes 2-8 s on 2 loaded cores, 0.3-1 s quiet)
SPARK_BATCHES = 120
DRIVER_BATCHES = 600
# A random pause between two driver commits. A driver committing every few milliseconds starves Spark, whose
# every retry (find the new commits, check them for conflicts, try the next version) takes longer: with 10 ms
# pauses Spark's first append committed after 250 of the driver's (2 cores, load 20).
DRIVER_PAUSE_S = (0.1, 0.5)
SPARK_AT_LEAST, DRIVER_AT_LEAST = 2, 100


def _commits(table: Path) -> dict[int, list[dict[str, Any]]]:
    """Every version's commit file, parsed whole (a torn or interleaved file fails here)."""
    out = {}
    for file in sorted((table / "_delta_log").glob("*.json")):
        out[int(file.stem)] = [json.loads(line) for line in file.read_text().splitlines()]
    assert sorted(out) == list(range(len(out))), "a version is missing from the log"
    return out


def _txn(actions: list[dict[str, Any]]) -> tuple[str, int] | None:
    txns = [a["txn"] for a in actions if "txn" in a]
    return (txns[0]["appId"], txns[0]["version"]) if txns else None


class _Background(threading.Thread):
    """Runs ``step(i)`` for i = 0, 1, ... until stopped or ``limit`` steps; keeps the first error."""

    def __init__(self, step: Any, limit: int) -> None:
        super().__init__(daemon=True)
        self.step, self.limit, self.done, self.error = step, limit, 0, None
        self.stop = threading.Event()
        self.deadline = time.monotonic() + SECONDS

    def run(self) -> None:
        try:
            while not self.stop.is_set() and self.done < self.limit and time.monotonic() < self.deadline:
                self.step(self.done)
                self.done += 1
                time.sleep(random.uniform(*DRIVER_PAUSE_S))
        except BaseException as error:  # reported by the test's thread
            self.error = error

    def finish(self) -> None:
        self.stop.set()
        self.join(timeout=120)
        assert not self.is_alive(), "the driver's writer did not stop"
        if self.error is not None:
            raise self.error


CHECKSUM_CONF = "spark.databricks.delta.writeChecksumFile.enabled"


@pytest.fixture
def no_post_commit_checksums(spark: SparkSession) -> Iterator[None]:
    """Delta's checksum after a Spark commit that had to skip the driver's versions is computed from the table's
    whole state, with a Spark job (16 s of a 24 s append at load 20 on 2 cores; the commit itself took 0.1 s):
    off while the writers race, so that Spark commits often enough to race at all. Commits are unchanged (the
    driver's writer adds a checksum only where the previous version has one)."""
    before = spark.conf.get(CHECKSUM_CONF, None)
    spark.conf.set(CHECKSUM_CONF, "false")
    yield
    if before is None:
        spark.conf.unset(CHECKSUM_CONF)
    else:
        spark.conf.set(CHECKSUM_CONF, before)


def _spark_turns(spark_step: Any, driver: _Background) -> int:
    """Spark commits while the driver's thread runs (until its deadline: a Spark commit under way then finishes
    alone): returns how many."""
    turns = 0
    driver.start()
    try:
        while time.monotonic() < driver.deadline and turns < SPARK_BATCHES and driver.is_alive():
            spark_step(turns)
            turns += 1
    finally:
        driver.finish()
    return turns


def test_appends_of_the_driver_and_of_spark_to_one_table_lose_no_batch(
    spark: SparkSession, tmp_path: Path, no_post_commit_checksums: None
) -> None:
    table = tmp_path / "t"
    spark.createDataFrame([], SCHEMA).write.format("delta").save(str(table))  # version 0, Spark's
    driver_versions: dict[int, int | None] = {}

    def driver_step(batch: int) -> None:
        data = pa.table(
            {"writer": ["driver"] * ROWS, "batch": [batch] * ROWS, "row": list(range(ROWS))},
            schema=pa.schema([("writer", pa.string()), ("batch", pa.int64()), ("row", pa.int64())]),
        )
        driver_versions[batch] = append_arrow(table, SCHEMA, data, txn=("driver-flow", batch), streaming=True)

    def spark_step(batch: int) -> None:
        # a plain append: an idempotent one (txnAppId) looks its app id up in the table's whole state, a Spark job
        # per append (9-40 s instead of 2 s at load 20 on 2 cores), and would leave no time to race
        (
            spark.range(ROWS)
            .selectExpr("'spark' AS writer", f"CAST({batch} AS BIGINT) AS batch", "id AS row")
            .write.format("delta")
            .mode("append")
            .save(str(table))
        )
        checkpoint_if_due(spark, table)  # as the runner does: Delta's checkpoints, _last_checkpoint replaced

    driver = _Background(driver_step, DRIVER_BATCHES)
    spark_batches = _spark_turns(spark_step, driver)
    assert spark_batches >= SPARK_AT_LEAST and driver.done >= DRIVER_AT_LEAST, (spark_batches, driver.done)

    rows = spark.read.format("delta").load(str(table)).groupBy("writer", "batch").count().collect()
    per_batch = {(r.writer, r.batch): r["count"] for r in rows}
    expected = {
        **{("driver", b): ROWS for b in range(driver.done)},
        **{("spark", b): ROWS for b in range(spark_batches)},
    }
    assert per_batch == expected, {k: v for k, v in expected.items() if per_batch.get(k) != v}

    commits = _commits(table)
    for batch, version in driver_versions.items():  # each driver commit is still in the version it was told
        assert version is not None and _txn(commits[version]) == ("driver-flow", batch), (batch, version)
        assert commits[version][0]["commitInfo"]["engineInfo"] == ENGINE_INFO
    by_spark = [
        v for v, actions in commits.items() if v > 0 and actions[0]["commitInfo"]["engineInfo"] != ENGINE_INFO
    ]
    assert len(by_spark) == spark_batches and len(commits) == 1 + driver.done + spark_batches
    # Spark's commits found the driver's in their way (read at one version, committed several later)
    retried = [v for v in by_spark if commits[v][0]["commitInfo"]["readVersion"] < v - 1]
    assert retried, "no Spark commit met a driver commit: nothing was tested"
    history = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").collect()
    assert sorted(h.version for h in history) == sorted(commits)


def test_the_event_log_written_by_the_driver_while_spark_appends_to_it_loses_no_event(
    spark: SparkSession, tmp_path: Path, no_post_commit_checksums: None
) -> None:
    path = str(tmp_path / "system" / "events")
    driver_log = EventLog(path, "pid", "pipe", "update-driver")
    spark_log = EventLog(path, "pid", "pipe", "update-spark")
    emitted = [driver_log.emit("create_update", "created")]
    driver_log.flush(spark)  # the table's first version, the driver's
    flushed: list[int] = []

    def driver_step(i: int) -> None:
        for n in range(3):
            emitted.append(driver_log.emit("flow_progress", f"driver {i}.{n}", flow_name="f", batch_id=i))
        flushed.append(driver_log.flush(spark))

    def spark_step(i: int) -> None:
        event = spark_log.emit("flow_progress", f"spark {i}", flow_name="g", batch_id=i)
        emitted.append(event)
        spark.createDataFrame([event], event_log_schema()).write.format("delta").mode("append").save(path)

    driver = _Background(driver_step, DRIVER_BATCHES)
    spark_batches = _spark_turns(spark_step, driver)
    # a flush of three events takes longer than an append of three rows (91 flushes in 60 s at load 20)
    assert spark_batches >= SPARK_AT_LEAST and driver.done >= DRIVER_AT_LEAST // 2, (
        spark_batches,
        driver.done,
    )
    assert flushed == [3] * driver.done

    ids = Counter(r.id for r in spark.read.format("delta").load(path).select("id").collect())
    assert len(emitted) == 1 + 3 * driver.done + spark_batches
    wrong = [e["id"] for e in emitted if ids[e["id"]] != 1]
    assert not wrong and sum(ids.values()) == len(emitted), f"{len(wrong)} events lost or doubled"
    commits = _commits(Path(path))
    by_driver = sum(actions[0]["commitInfo"]["engineInfo"] == ENGINE_INFO for actions in commits.values())
    assert by_driver == 1 + driver.done  # every flush was the driver's commit, none fell back to Spark

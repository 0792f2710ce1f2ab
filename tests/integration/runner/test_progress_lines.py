"""A long flow is never silent (issue 20): while it runs, one line per micro-batch of each running query, every
MEDALLION_PROGRESS_SECONDS (10 by default), in plain text."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.runner.ticker import describe_progress
from framework.runner.update import UpdateOptions, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

SLOW = """
import time
import dlt
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

@F.udf(LongType())
def slow(x):
    time.sleep(0.4)
    return x

@dlt.table
def slow_rows():
    return (spark.readStream.format("json").schema("id BIGINT").option("maxFilesPerTrigger", 1)
            .load(spark.conf.get("landing")).select(slow("id").alias("id")))
"""


def test_a_long_flow_reports_its_micro_batches(spark: SparkSession, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEDALLION_PROGRESS_SECONDS", "1")
    landing = tmp_path / "landing"
    for i in range(4):
        write_json_lines(landing, f"{i}.json", [f'{{"id": {i * 10 + j}}}' for j in range(4)])
    spec = make_pipeline(tmp_path, {"p.py": SLOW}, {"landing": str(landing)})
    out = io.StringIO()
    result = run_update(spec, UpdateOptions(out=out), spark=spark)
    assert result.succeeded, result.error or [f.error for f in result.flows]
    lines = [line.strip() for line in out.getvalue().splitlines() if line.strip().startswith("slow_rows: batch")]
    assert lines, out.getvalue()
    assert all(" rows/s" in line for line in lines)
    assert len({line.split(",")[0] for line in lines}) == len(lines)  # each batch reported once


def test_describe_progress() -> None:
    line = describe_progress("orders", {"batchId": 3, "numInputRows": 250, "processedRowsPerSecond": 99.6,
                                        "sources": [{"endOffset": {"logOffset": 7}}]})
    assert line == "orders: batch 3, 250 rows, 100 rows/s, read up to {'logOffset': 7}"


def test_ctrl_c_stops_the_update_and_the_event_log_says_canceled(spark: SparkSession, tmp_path: Path) -> None:
    """Ctrl-C during a flow: every query stops (nothing half-committed), the event log closes CANCELED, the
    KeyboardInterrupt goes on to the caller (the CLI exits 130), and the next update finishes the work."""
    import _thread
    import threading

    landing = tmp_path / "landing"
    for i in range(6):
        write_json_lines(landing, f"{i}.json", [f'{{"id": {i * 10 + j}}}' for j in range(4)])
    spec = make_pipeline(tmp_path, {"p.py": SLOW}, {"landing": str(landing)})
    timer = threading.Timer(6.0, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    finally:
        timer.cancel()
    assert not spark.streams.active
    events = spark.read.format("delta").load(str(spec.events_dir))
    last = events.where("event_type = 'update_progress'").orderBy("timestamp").collect()[-1]
    assert last.message.endswith("is CANCELED.")
    again = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert again.succeeded
    ids = sorted(r.id for r in spark.read.format("delta").load(str(spec.tables_dir / "slow_rows")).collect())
    assert ids == sorted(i * 10 + j for i in range(6) for j in range(4))  # every row exactly once


class _CtrlCAtStart(io.StringIO):
    """The console's stream: Ctrl-C lands while the first "starting" line is written (outside the wait for the
    flows, where the interrupt usually lands)."""

    fired = False

    def write(self, text: str) -> int:
        if "starting" in text and not self.fired:
            self.fired = True
            raise KeyboardInterrupt
        return super().write(text)


def test_ctrl_c_as_a_flow_starts_cancels_the_update(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "0.json", ['{"id": 1}', '{"id": 2}'])
    spec = make_pipeline(tmp_path, {"p.py": SLOW}, {"landing": str(landing)})
    out = _CtrlCAtStart()
    with pytest.raises(KeyboardInterrupt):
        run_update(spec, UpdateOptions(out=out), spark=spark)
    assert out.fired and not spark.streams.active
    events = spark.read.format("delta").load(str(spec.events_dir))
    last = events.where("event_type = 'update_progress'").orderBy("timestamp").collect()[-1]
    assert last.message.endswith("is CANCELED.")
    again = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)  # queries start again
    assert again.succeeded
    ids = sorted(r.id for r in spark.read.format("delta").load(str(spec.tables_dir / "slow_rows")).collect())
    assert ids == [1, 2]

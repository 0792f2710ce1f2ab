"""No-data batches (framework/runner/streams.py) stay as Spark has them: a windowed aggregation emits the
windows the watermark closed, and a de-duplication's watermark survives the restart into the next update, so
a late event is dropped there as on Databricks (issue 36)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from framework.runner.streams import NO_DATA_BATCHES
from framework.runner.update import UpdateOptions, run_update
from framework.spec import PipelineSpec
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

pytestmark = pytest.mark.spark

PIPELINE = """
import dlt
from pyspark.sql import functions as F

def events():
    return (spark.readStream.format("json").schema("id bigint, ts timestamp, amount double")
            .load(spark.conf.get("landing")))

@dlt.table
@dlt.expect_or_drop("has_amount", "amount IS NOT NULL")
def unique_events():
    return events().withWatermark("ts", "1 day").dropDuplicatesWithinWatermark(["id"])

@dlt.table
def hourly():
    return (events().withWatermark("ts", "10 minutes")
            .groupBy(F.window("ts", "1 hour").alias("w")).agg(F.count("*").alias("n"))
            .select(F.col("w.start").alias("hour"), "n"))
"""


def _committed_batches(spec: PipelineSpec, target: str) -> list[str]:
    commits = spec.checkpoints_dir / target / target / "commits"
    return sorted(p.name for p in commits.iterdir() if p.name.isdigit())


def test_no_data_batches_run_and_a_late_event_is_dropped_after_a_restart(spark, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "1.json", ['{"id":1,"ts":"2026-01-01T00:05:00","amount":1}',
                                         '{"id":2,"ts":"2026-01-01T00:20:00","amount":2}',
                                         '{"id":2,"ts":"2026-01-01T00:21:00","amount":2}',
                                         '{"id":3,"ts":"2026-01-01T02:00:00","amount":3}'])
    spec = make_pipeline(tmp_path, {"p.py": PIPELINE}, {"landing": str(landing)})
    before = spark.conf.get(NO_DATA_BATCHES, None)

    first = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert first.succeeded, [(f.flow, f.error) for f in first.flows]
    # De-duplication: the batch with data, then the no-data batch that records the advanced watermark.
    assert _committed_batches(spec, "unique_events") == ["0", "1"]
    assert sorted(r.id for r in spark.read.table(f"{spec.schema}.unique_events").collect()) == [1, 2, 3]
    # Windowed aggregation in append mode: the no-data batch still runs and emits the hour the watermark
    # (02:00 - 10 minutes) closed, in this same update.
    assert _committed_batches(spec, "hourly") == ["0", "1"]
    hourly = {r.hour.hour: r.n for r in spark.read.table(f"{spec.schema}.hourly").collect()}
    assert hourly == {0: 3}  # ids 1, 2 and its repeat: the aggregation does not de-duplicate
    assert spark.conf.get(NO_DATA_BATCHES, None) == before

    # The next update's first batch starts from the watermark of the last one (02:00 - 1 day): an event older
    # than it is dropped (id 6), a repeat within the delay is still dropped, a new key is kept, and the
    # expectation's metrics count only that batch.
    write_json_lines(landing, "2.json", ['{"id":2,"ts":"2026-01-01T03:00:00","amount":2}',
                                         '{"id":6,"ts":"2025-12-30T12:00:00","amount":6}',
                                         '{"id":4,"ts":"2026-01-01T03:30:00","amount":null}',
                                         '{"id":5,"ts":"2026-01-01T03:40:00","amount":5}'])
    second = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert second.succeeded, [(f.flow, f.error) for f in second.flows]
    assert sorted(r.id for r in spark.read.table(f"{spec.schema}.unique_events").collect()) == [1, 2, 3, 5]
    flow = second.flow("unique_events")
    assert (flow.num_output_rows, flow.dropped_records) == (1, 1)
    assert _committed_batches(spec, "unique_events") == ["0", "1", "2", "3"]

"""Issue 36: ``depends_on`` on ``@dp.append_flow`` / ``@dp.update_flow`` (Databricks' flow ordering, Public
Preview): a flow starts only after the flows it names completed, though it does not read what they write;
Databricks' example drains a one-time backfill before the live stream into the same table. An unknown name is
FLOW_DEPENDS_ON_UNKNOWN when the graph is validated."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.runner.update import UpdateOptions, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PIPELINE = """
from pyspark import pipelines as dp

dp.create_streaming_table(name="events")

# declared first, so without depends_on it would run first
@dp.append_flow(target="events", name="events_live", depends_on="events_backfill")
def live():
    return spark.readStream.format("json").schema("id BIGINT").load(spark.conf.get("landing"))

@dp.append_flow(target="events", once=True, name="events_backfill")
def backfill():
    return spark.range(100, 102)

@dp.append_flow(target="events", once=True, name="last", depends_on=["events_live", "events_backfill"])
def last():
    return spark.range(900, 901)
"""


def _started(spark: SparkSession, spec: object) -> list[str]:
    """The flows in the order their first event after QUEUED was logged."""
    events = spark.read.format("delta").load(str(spec.events_dir))  # type: ignore[attr-defined]
    rows = events.where("event_type = 'flow_progress' AND message NOT LIKE '%QUEUED%'").orderBy("timestamp",
                                                                                              "sequence").collect()
    seen: list[str] = []
    for row in rows:
        if row.origin.flow_name not in seen:
            seen.append(row.origin.flow_name)
    return seen


def test_depends_on_orders_flows(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id": 1}'])
    spec = make_pipeline(tmp_path, {"p.py": PIPELINE}, {"landing": str(landing)})
    result = run_update(spec, UpdateOptions(), spark=spark)
    assert result.succeeded, result.error or [f.error for f in result.flows]
    assert _started(spark, spec) == ["events_backfill", "events_live", "last"]
    rows = sorted(r.id for r in spark.read.format("delta").load(str(spec.tables_dir / "events")).collect())
    assert rows == [1, 100, 101, 900]


def test_an_unknown_flow_in_depends_on(spark: SparkSession, tmp_path: Path) -> None:
    spec = make_pipeline(tmp_path, {"p.py": PIPELINE.replace('depends_on="events_backfill"',
                                                              'depends_on="events_backfil"')},
                         {"landing": str(tmp_path)})
    result = run_update(spec, UpdateOptions(), spark=spark)
    assert not result.succeeded and result.error is not None
    assert "FLOW_DEPENDS_ON_UNKNOWN" in str(result.error) and "events_backfill" in str(result.error)
    assert "p.py:" in str(result.error)

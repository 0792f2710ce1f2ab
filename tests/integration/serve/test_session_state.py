"""framework/serve/session_state.py: what a request leaves in the warm session is gone before the next one."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from framework.serve.session_state import SessionBaseline

pytestmark = [pytest.mark.spark]


def test_restore_stops_a_streaming_query_left_active_and_resets_the_rest(spark: SparkSession, tmp_path: Path) -> None:
    baseline = SessionBaseline(spark)
    query = (spark.readStream.format("rate").option("rowsPerSecond", "1").load().writeStream.format("noop")
             .queryName("left_by_an_interrupted_update").option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(processingTime="10 seconds").start())
    spark.conf.set("medallion.test.left", "secret")
    spark.range(1).createOrReplaceTempView("left_view")
    assert query.isActive
    baseline.restore()
    assert not query.isActive and not spark.streams.active
    assert spark.conf.get("medallion.test.left", None) is None
    assert not [r for r in spark.sql("SHOW VIEWS").where("isTemporary").collect() if r["viewName"] == "left_view"]
    # the next update's flow of the same name starts
    again = (spark.readStream.format("rate").load().writeStream.format("noop")
             .queryName("left_by_an_interrupted_update").option("checkpointLocation", str(tmp_path / "cp2"))
             .trigger(availableNow=True).start())
    again.awaitTermination(60)
    assert not again.isActive

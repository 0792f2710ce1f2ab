"""runner/streams.py: once an update is interrupted, a flow that was about to start its query does not start it
(Ctrl-C stops the active queries; a query started after that would outlive the update)."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from framework.errors import UpdateError
from framework.runner import streams

pytestmark = [pytest.mark.spark]


def test_no_query_starts_between_an_interrupt_and_the_next_update(spark: SparkSession) -> None:
    df = spark.readStream.format("rate").load()
    started: list[str] = []
    streams.refuse_starts()
    try:
        with pytest.raises(UpdateError) as refused:
            streams.start_query(df, lambda: started.append("late"))
        assert refused.value.code == "UPDATE_CANCELED" and started == []
    finally:
        streams.allow_starts()
    assert streams.start_query(df, lambda: started.append("next update") or "query") == "query"
    assert started == ["next update"]

"""De-duplication helpers on batch and streaming inputs, deterministic for ties."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from framework.errors import PipelineError
from framework.quality.dedup import dedup_within_watermark, drop_exact_duplicates, latest_by_key

from .conftest import ts

pytestmark = pytest.mark.spark

CUSTOMERS_DDL = "customer_id BIGINT, name STRING, email STRING, country STRING, updated_at TIMESTAMP"
CUSTOMERS = [
    (1, "Ada", "ada@x.io", "GB", ts(1)),
    (1, "Ada L.", "ada@x.io", "GB", ts(3)),       # latest for 1
    (1, "Ada", "ada@x.io", "GB", ts(1)),          # exact duplicate
    (2, "Bob", "bob@x.io", "US", ts(2)),
    (2, "Bobby", "bob@x.io", "US", ts(2)),        # tie on updated_at: greatest tie-breaker (name) wins
    (3, "Cy", None, "FR", None),                  # NULL ordering loses...
    (3, "Cyrus", None, "FR", ts(1)),              # ...to any non-NULL
]


def rows(df, *cols: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted(tuple(r[c] for c in cols) for r in df.collect())


def test_exact_duplicates(spark) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame(CUSTOMERS, CUSTOMERS_DDL)
    assert drop_exact_duplicates(df).count() == 6
    by_id = drop_exact_duplicates(df, ["customer_id"])
    assert rows(by_id, "customer_id", "name") == [(1, "Ada"), (2, "Bob"), (3, "Cy")]  # least other columns


def test_latest_by_key_is_deterministic_under_any_partitioning(spark) -> None:  # type: ignore[no-untyped-def]
    expected = [(1, "Ada L."), (2, "Bobby"), (3, "Cyrus")]
    for data in (CUSTOMERS, list(reversed(CUSTOMERS))):
        for partitions in (1, 3):
            df = spark.createDataFrame(data, CUSTOMERS_DDL).repartition(partitions)
            assert rows(latest_by_key(df, "customer_id", "updated_at"), "customer_id", "name") == expected
    df = spark.createDataFrame(CUSTOMERS, CUSTOMERS_DDL)
    assert latest_by_key(df, ["customer_id"], "updated_at").columns == df.columns
    picked = latest_by_key(df, "customer_id", "updated_at", tie_breakers=["email"])
    assert rows(picked, "customer_id")[1] == (2,)
    with pytest.raises(PipelineError) as caught:
        latest_by_key(df, "id", "updated_at")
    assert caught.value.code == "DEDUP_UNKNOWN_COLUMN"


def test_latest_by_key_skips_unorderable_tie_breakers(spark) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([(1, 5, {"a": "1"}), (1, 5, {"a": "2"}), (1, 4, {"b": "3"})],
                               "k INT, v INT, m MAP<STRING, STRING>")
    assert latest_by_key(df, "k", "v").count() == 1


def test_batch_watermark_dedup_keeps_the_earliest(spark) -> None:  # type: ignore[no-untyped-def]
    df = spark.createDataFrame([("e1", ts(1, 2), "late"), ("e1", ts(1, 1), "first"), ("e2", ts(1), "x")],
                               "event_id STRING, event_ts TIMESTAMP, payload STRING")
    out = dedup_within_watermark(df, "event_id", "event_ts", "1 hour")
    assert rows(out, "event_id", "payload") == [("e1", "first"), ("e2", "x")]


def _stream_through_memory(spark, df, mode: str) -> list:  # type: ignore[no-untyped-def]
    name = f"q_{uuid.uuid4().hex[:8]}"
    query = df.writeStream.format("memory").queryName(name).outputMode(mode).trigger(availableNow=True).start()
    query.awaitTermination()
    result = spark.table(name).collect()
    spark.catalog.dropTempView(name)
    return result


def test_streaming_dedup(spark, storage: Path) -> None:  # type: ignore[no-untyped-def]
    source = str(storage / "customers_raw")
    spark.createDataFrame(CUSTOMERS, CUSTOMERS_DDL).write.format("delta").save(source)
    stream = spark.readStream.format("delta").load(source)

    within = _stream_through_memory(
        spark, dedup_within_watermark(stream.where("updated_at IS NOT NULL"), "customer_id", "updated_at",
                                      "1 day"), "append")
    assert sorted(r.customer_id for r in within) == [1, 2, 3]
    latest = _stream_through_memory(spark, latest_by_key(stream, "customer_id", "updated_at"), "complete")
    assert sorted((r.customer_id, r.name) for r in latest) == [(1, "Ada L."), (2, "Bobby"), (3, "Cyrus")]

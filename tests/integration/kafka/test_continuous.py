"""Continuous mode over Kafka: the update keeps reading the topic with processing-time triggers, records produced
while it runs reach the silver table, and the latency from a record's production to its silver row is reported
(printed, and bounded loosely: 2 cores shared with other Spark jobs)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.storage.log import has_commit
from tests.integration.runner.pipeline_factory import make_pipeline
from tests.integration.runner.test_continuous import _Continuous, _wait_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.testing.kafka import KafkaBroker

pytestmark = pytest.mark.spark

PIPELINE = """
import dlt
from pyspark.sql import functions as F

@dlt.table
def bronze():
    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", spark.conf.get("servers"))
            .option("subscribe", spark.conf.get("topic")).option("startingOffsets", "earliest").load()
            .select(F.from_json(F.col("value").cast("string"), "id BIGINT").id.alias("id")))

@dlt.table
@dlt.expect_or_drop("has_id", "id IS NOT NULL")
def silver():
    return dlt.read_stream("bronze")
"""


def test_continuous_update_reads_new_records_and_reports_latency(spark: SparkSession, kafka_broker: KafkaBroker,
                                                                 kafka_topic: str, tmp_path: Path) -> None:
    kafka_broker.produce(kafka_topic, [json.dumps({"id": 0})])
    spec = make_pipeline(tmp_path, {"p.py": PIPELINE}, {"servers": kafka_broker.bootstrap_servers,
                                                        "topic": kafka_topic,
                                                        "pipelines.trigger.interval": "1 second"})
    silver = spec.tables_dir / "silver"

    def ids() -> set[int]:
        if not has_commit(silver):
            return set()
        return {r.id for r in spark.read.format("delta").load(str(silver)).collect()}

    latencies = []
    with _Continuous(spec, spark) as run:
        _wait_for(lambda: ids() == {0})
        for probe in range(1, 4):
            produced = time.monotonic()
            kafka_broker.produce(kafka_topic, [json.dumps({"id": probe})])
            _wait_for(lambda p=probe: p in ids(), seconds=60)
            latencies.append(time.monotonic() - produced)
        assert run.worker.is_alive()
    print(f"Kafka -> silver latency at a 1 s trigger: {', '.join(f'{s:.1f}s' for s in latencies)}")
    assert run.result.succeeded, run.result.error or [f.error for f in run.result.flows]
    assert max(latencies) < 60


RETRIED = """
import dlt

@dlt.table
def bronze():
    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", spark.conf.get("servers"))
            .option("subscribe", spark.conf.get("topic")).option("startingOffsets", "earliest")
            .option("kafka.default.api.timeout.ms", "3000").option("kafka.request.timeout.ms", "3000")
            .option("fetchOffset.numRetries", "1").load()
            .selectExpr("CAST(value AS STRING) AS value"))
"""


def test_continuous_retries_with_backoff_while_the_broker_is_down(spark: SparkSession, tmp_path: Path) -> None:
    """The broker stops under a continuous run: the flow fails with a Kafka error and is retried with backoff
    (RETRYING events) instead of ending the update; once the broker is back, records produced meanwhile arrive,
    each once."""
    from framework.testing.kafka import start_broker

    broker = start_broker(tmp_path / "kafka")
    topic = broker.create_topic("retried")
    spec = make_pipeline(tmp_path, {"p.py": RETRIED}, {
        "servers": broker.bootstrap_servers, "topic": topic, "pipelines.trigger.interval": "1 second",
        "pipelines.maxFlowRetryAttempts": "30", "medallion.continuous.eventLogCommitSeconds": "1"})
    bronze = spec.tables_dir / "bronze"

    def values() -> list[str]:
        return sorted(r.value for r in spark.read.format("delta").load(str(bronze)).collect()) \
            if has_commit(bronze) else []

    def retrying() -> list[str]:
        if not has_commit(spec.events_dir):
            return []
        return [r.message for r in spark.read.format("delta").load(str(spec.events_dir)).where(
            "event_type = 'flow_progress' AND origin.flow_name = 'bronze' AND message LIKE '%RETRYING%'").collect()]

    try:
        broker.produce(topic, ["a"])
        with _Continuous(spec, spark) as run:
            _wait_for(lambda: values() == ["a"])
            broker.stop()
            _wait_for(lambda: any("failed (KafkaError)" in m for m in retrying()), seconds=180)
            broker = start_broker(tmp_path / "kafka")  # the same folder: the same ports and data
            broker.produce(topic, ["b", "c"])
            _wait_for(lambda: values() == ["a", "b", "c"], seconds=180)
            assert run.worker.is_alive()
        assert run.result.succeeded, run.result.error or [f.error for f in run.result.flows]
        assert values() == ["a", "b", "c"]  # each once
        messages = retrying()
        assert any("retry 1 of 30 in 1s" in m for m in messages), messages
    finally:
        broker.stop()

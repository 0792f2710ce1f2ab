"""Continuous mode over Kafka: the update keeps reading the topic with processing-time triggers, records produced
while it runs reach the silver table, and the latency from a record's production to its silver row is reported
(printed, and bounded loosely: 2 cores shared with other Spark jobs)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.delta_log import has_commit
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

"""SQL's read_kafka: the SQL twin of the Kafka example pipeline (pipelines/kafka_orders_sql) under STREAM over two
updates, and a batch read_kafka in a materialized view."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.errors import SqlError
from framework.kafka.sql import kafka_options
from tests.integration.kafka.conftest import event, orders_spec, rows, update
from tests.integration.runner.pipeline_factory import make_pipeline

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.testing.kafka import KafkaBroker

pytestmark = pytest.mark.spark


def test_sql_pipeline_from_kafka_to_apply_changes(spark: SparkSession, kafka_broker: KafkaBroker, kafka_topic: str,
                                                  tmp_path: Path) -> None:
    kafka_broker.produce(kafka_topic, [event(1, "new", 10.0, 0), "{oops", event(1, "paid", 10.0, 1)])
    spec = orders_spec("kafka_orders_sql.yaml", kafka_broker, kafka_topic, tmp_path / "storage")
    first = update(spec, spark)
    assert first.succeeded, first.error or [f.error for f in first.flows]
    assert rows(spark, spec, "orders_quarantine", "offset,_corrupt_record", "offset") == [(1, "{oops")]
    assert rows(spark, spec, "orders", "order_id,status", "order_id") == [(1, "paid")]
    kafka_broker.produce(kafka_topic, [event(2, "new", 3.0, 2)])
    second = update(spec, spark)
    assert second.succeeded, second.error or [f.error for f in second.flows]
    assert len(rows(spark, spec, "orders_bronze", "offset", "offset")) == 4
    assert rows(spark, spec, "orders", "order_id,status", "order_id") == [(1, "paid"), (2, "new")]


def test_batch_read_kafka_in_a_materialized_view(spark: SparkSession, kafka_broker: KafkaBroker, kafka_topic: str,
                                                 tmp_path: Path) -> None:
    kafka_broker.produce(kafka_topic, ["a", "b", "c"])
    spec = make_pipeline(tmp_path, {"counts.sql": """
        CREATE OR REFRESH MATERIALIZED VIEW counts AS
        SELECT topic, count(*) AS n FROM read_kafka(bootstrapServers => '${servers}', subscribe => '${topic}')
        GROUP BY topic;
    """}, {"servers": kafka_broker.bootstrap_servers, "topic": kafka_topic})
    result = update(spec, spark)
    assert result.succeeded, result.error or [f.error for f in result.flows]
    assert rows(spark, spec, "counts", "topic,n", "topic") == [(kafka_topic, 3)]


def test_read_kafka_arguments() -> None:
    assert kafka_options([("bootstrapServers", "h:1"), ("subscribe", "t"), ("kafka.security.protocol", "SSL")]) == {
        "kafka.bootstrap.servers": "h:1", "subscribe": "t", "kafka.security.protocol": "SSL"}
    with pytest.raises(SqlError, match="bootstrapServers"):
        kafka_options([("subscribe", "t")])
    with pytest.raises(SqlError, match="exactly one of"):
        kafka_options([("bootstrapServers", "h:1"), ("subscribe", "t"), ("assign", '{"t": [0]}')])

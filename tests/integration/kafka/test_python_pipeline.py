"""The Kafka example pipeline (pipelines/kafka_orders) against a real broker: bronze → silver → APPLY CHANGES
and a Kafka sink read back with a plain consumer, malformed values kept, two updates reading only what is new,
and a full refresh that rebuilds the tables but does not clear the sink (Databricks: "a full refresh does not
clear sinks; reprocessed data is appended")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.integration.kafka.conftest import event, orders_spec, rows, update

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.testing.kafka import KafkaBroker

pytestmark = pytest.mark.spark


def test_kafka_to_bronze_silver_and_apply_changes_over_two_updates(
        spark: SparkSession, kafka_broker: KafkaBroker, kafka_topic: str, tmp_path: Path) -> None:
    broker = kafka_broker
    broker.produce(kafka_topic, [event(1, "new", 10.0, 0), event(2, "new", 5.0, 1), "not json {",
                                 '{"order_id": "x1", "status": "new"}', event(1, "paid", 10.0, 2)],
                   keys=["1", "2", "bad", "bad", "1"])
    spec = orders_spec("kafka_orders.yaml", broker, kafka_topic, tmp_path / "storage")
    first = update(spec, spark)
    assert first.succeeded, first.error
    assert len(rows(spark, spec, "orders_bronze", "offset", "offset")) == 5
    assert rows(spark, spec, "orders_quarantine", "offset,_corrupt_record", "offset") == [
        (2, "not json {"), (3, '{"order_id": "x1", "status": "new"}')]
    assert rows(spark, spec, "orders_silver", "order_id,status", "offset") == [(1, "new"), (2, "new"), (1, "paid")]
    assert rows(spark, spec, "orders", "order_id,status", "order_id") == [(1, "paid"), (2, "new")]

    broker.produce(kafka_topic, [event(2, "shipped", 5.0, 3), event(3, "new", 7.5, 4)])
    second = update(spec, spark)
    assert second.succeeded, second.error
    assert len(rows(spark, spec, "orders_bronze", "offset", "offset")) == 7  # only the new records read
    assert rows(spark, spec, "orders", "order_id,status", "order_id") == [(1, "paid"), (2, "shipped"), (3, "new")]

    published = [(k, json.loads(v)["status"]) for k, v in broker.consume(f"{kafka_topic}_out")]
    assert published == [(b"1", "new"), (b"2", "new"), (b"1", "paid"), (b"2", "shipped"), (b"3", "new")]

    refreshed = update(spec, spark, full_refresh=True)
    assert refreshed.succeeded, refreshed.error
    assert len(rows(spark, spec, "orders_bronze", "offset", "offset")) == 7  # rebuilt from the topic's start
    assert rows(spark, spec, "orders", "order_id,status", "order_id") == [(1, "paid"), (2, "shipped"), (3, "new")]
    again = [(k, json.loads(v)["status"]) for k, v in broker.consume(f"{kafka_topic}_out")]
    assert again == published + published  # the sink kept its records; the reprocessed ones were appended

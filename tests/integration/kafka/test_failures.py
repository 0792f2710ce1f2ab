"""Kafka failures said clearly, before anything is committed: brokers that do not answer (named), a topic that
does not exist (read or sink), credentials never shown."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.redaction import redact
from framework.testing.postgres import free_port
from tests.integration.kafka.conftest import update
from tests.integration.runner.pipeline_factory import make_pipeline

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.testing.kafka import KafkaBroker

pytestmark = pytest.mark.spark

JAAS_PASSWORD = "kafka-test-secret-9f3"
READ = """
import dlt

@dlt.table
def events():
    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", spark.conf.get("servers"))
            .option("subscribe", spark.conf.get("topic"))
            .option("kafka.default.api.timeout.ms", "3000").option("kafka.request.timeout.ms", "3000")
            .option("kafka.sasl.jaas.config", spark.conf.get("jaas", ""))
            .load())
"""
SINK = """
import dlt

dlt.create_sink("out", format="kafka", options={"kafka.bootstrap.servers": spark.conf.get("servers"),
                                                "topic": spark.conf.get("out_topic")})

@dlt.append_flow(target="out")
def publish():
    return spark.readStream.format("rate").option("rowsPerSecond", "1").load().selectExpr("CAST(value AS STRING) AS value")
"""


def test_brokers_that_do_not_answer_are_named(spark: SparkSession, tmp_path: Path) -> None:
    servers = f"127.0.0.1:{free_port()}"
    jaas = f'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="{JAAS_PASSWORD}";'
    spec = make_pipeline(tmp_path, {"read.py": READ}, {"servers": servers, "topic": "orders", "jaas": jaas})
    result = update(spec, spark)
    assert not result.succeeded
    assert result.error is not None and result.error.code == "KAFKA_BROKER_UNREACHABLE"
    assert servers in str(result.error) and "within 3000 ms" in str(result.error)
    assert JAAS_PASSWORD not in redact(f"password={JAAS_PASSWORD}")  # registered as a secret by the check
    events = [r[0] for r in spark.read.format("delta").load(str(spec.events_dir))
              .selectExpr("to_json(struct(*))").collect()]
    assert events and not [e for e in events if JAAS_PASSWORD in e]
    assert not (spec.tables_dir / "events").exists()


def test_a_topic_that_does_not_exist_says_so(spark: SparkSession, kafka_broker: KafkaBroker, tmp_path: Path) -> None:
    spec = make_pipeline(tmp_path, {"read.py": READ},
                         {"servers": kafka_broker.bootstrap_servers, "topic": "no_such_topic"})
    result = update(spec, spark)
    assert result.error is not None and result.error.code == "KAFKA_TOPIC_NOT_FOUND"
    assert "'no_such_topic'" in str(result.error) and kafka_broker.bootstrap_servers in str(result.error)


def test_a_sink_topic_that_does_not_exist_says_so(spark: SparkSession, kafka_broker: KafkaBroker,
                                                  tmp_path: Path) -> None:
    spec = make_pipeline(tmp_path, {"sink.py": SINK},
                         {"servers": kafka_broker.bootstrap_servers, "out_topic": "no_such_out"})
    result = update(spec, spark)
    error = next(f.error for f in result.flows if f.error is not None)
    assert error.code == "KAFKA_TOPIC_NOT_FOUND" and "'no_such_out'" in str(error)


def test_a_kafka_failure_of_a_running_query_is_classified(spark: SparkSession) -> None:
    """What Spark raises when the brokers stop answering after the driver's check (here: a read that skips the
    check, against nothing) becomes KAFKA_BROKER_UNREACHABLE naming the servers the flow was checked against."""
    from framework.failures import classify
    from framework.kafka.check import _CHECKED

    servers = f"127.0.0.1:{free_port()}"
    _CHECKED.servers = servers  # what check_topics notes for the flow's thread
    reader = (spark.read.format("kafka").option("kafka.bootstrap.servers", servers).option("subscribe", "t")
              .option("kafka.default.api.timeout.ms", "1500").option("kafka.request.timeout.ms", "1500")
              .option("fetchOffset.numRetries", "1"))
    with pytest.raises(Exception) as raised:
        reader.load().count()
    error = classify(raised.value, flow="events", dataset="events")
    assert error.code == "KAFKA_BROKER_UNREACHABLE" and servers in str(error), error

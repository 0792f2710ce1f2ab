"""A pipeline that reads and publishes through the broker's SASL_PLAINTEXT listener (mechanism PLAIN): the
``kafka.security.protocol`` / ``kafka.sasl.*`` options pass through to Spark's connector unchanged, the JAAS
entry comes from a ``{{secrets/<scope>/<key>}}`` reference in the spec's configuration, and its password shows
nowhere; a password the broker refuses is KAFKA_AUTHENTICATION_FAILED naming the servers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.redaction import SECRETS
from tests.integration.kafka.conftest import update
from tests.integration.runner.pipeline_factory import make_pipeline

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.spec import PipelineSpec
    from framework.testing.kafka import KafkaBroker

pytestmark = pytest.mark.spark

PIPELINE = """
import dlt

SECURITY = {"kafka.bootstrap.servers": spark.conf.get("servers"),
            "kafka.security.protocol": spark.conf.get("protocol"), "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": spark.conf.get("jaas")}


@dlt.table
def events():
    return (spark.readStream.format("kafka").options(**SECURITY).option("subscribe", spark.conf.get("topic"))
            .option("startingOffsets", "earliest").load()
            .selectExpr("CAST(value AS STRING) AS value"))


dlt.create_sink("out", format="kafka", options={**SECURITY, "topic": spark.conf.get("out_topic")})


@dlt.append_flow(target="out")
def publish():
    return dlt.read_stream("events").selectExpr("upper(value) AS value")
"""


def _spec(tmp_path: Path, broker: KafkaBroker, topic: str) -> PipelineSpec:
    return make_pipeline(tmp_path, {"p.py": PIPELINE}, {
        "servers": broker.sasl_bootstrap_servers, "protocol": "SASL_PLAINTEXT", "topic": topic,
        "out_topic": broker.create_topic(f"{topic}_out"), "jaas": "{{secrets/kafka/jaas}}"})


def _events(spark: SparkSession, spec: PipelineSpec) -> str:
    return json.dumps([r[0] for r in spark.read.format("delta").load(str(spec.events_dir))
                       .selectExpr("to_json(struct(*))").collect()])


def test_a_pipeline_reads_and_publishes_through_sasl(spark: SparkSession, kafka_broker: KafkaBroker,
                                                     kafka_topic: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    assert kafka_broker.sasl_port, "the test broker has no SASL listener"
    monkeypatch.setenv("DATABRICKS_SECRET_KAFKA_JAAS", kafka_broker.sasl_jaas_config())
    kafka_broker.produce(kafka_topic, ["a", "b", "c"])
    spec = _spec(tmp_path, kafka_broker, kafka_topic)
    result = update(spec, spark)
    assert result.succeeded, result.error or [f.error for f in result.flows]
    table = spark.read.format("delta").load(str(spec.tables_dir / "events"))
    assert sorted(r.value for r in table.collect()) == ["a", "b", "c"]
    assert sorted(v for _, v in kafka_broker.consume(f"{kafka_topic}_out")) == [b"A", b"B", b"C"]
    events = _events(spark, spec)
    assert kafka_broker.sasl_password not in events and "{{secrets/kafka/jaas}}" in events
    SECRETS.clear()


def test_a_password_the_broker_refuses_is_an_authentication_failure(
        spark: SparkSession, kafka_broker: KafkaBroker, kafka_topic: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = "not-the-password-71c"
    monkeypatch.setenv("DATABRICKS_SECRET_KAFKA_JAAS", kafka_broker.sasl_jaas_config(wrong))
    spec = _spec(tmp_path, kafka_broker, kafka_topic)
    result = update(spec, spark)
    assert not result.succeeded
    errors = [e for e in (result.error, *(f.error for f in result.flows)) if e is not None]
    assert errors and {e.code for e in errors} == {"KAFKA_AUTHENTICATION_FAILED"}, errors
    assert all(kafka_broker.sasl_bootstrap_servers in str(e) for e in errors)
    assert wrong not in " ".join(str(e) for e in errors) + _events(spark, spec)
    assert not (spec.tables_dir / "events").exists()
    SECRETS.clear()

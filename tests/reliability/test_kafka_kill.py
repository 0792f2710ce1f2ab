"""kill -9 of an update while it reads Kafka, then a rerun: every record exactly once in bronze and silver, and
at least once in the topic a Kafka sink writes (Spark's Kafka sink is at-least-once on the wire: a batch killed
after some of its records were sent sends them again when it runs again).

The Kafka source's offsets of each micro-batch are in the flow's checkpoint (its offset log, written before the
batch runs) and the Delta commit of the batch carries the query's id and batch id (``txn``): a batch killed before
its commit runs again from the same offsets, one killed after its commit is skipped by Delta. The pipeline reads
in small batches (``maxOffsetsPerTrigger``) so that a kill lands between, or inside, micro-batches.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.runner.update import UpdateOptions, run_update
from framework.spec import load_spec
from tests.reliability.helpers import write_spec
from tests.reliability.test_kill_and_rerun import run_and_kill

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.testing.kafka import KafkaBroker

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PIPELINE = """
import dlt
from pyspark.sql import functions as F

@dlt.table
def bronze():
    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", spark.conf.get("servers"))
            .option("subscribe", spark.conf.get("topic"))
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "150")
            .load()
            .select(F.from_json(F.col("value").cast("string"), "id BIGINT").id.alias("id"), "partition", "offset"))

@dlt.table
def silver():
    return dlt.read_stream("bronze").select("id", (F.col("id") * 2).alias("twice"))

dlt.create_sink("out", format="kafka", options={"kafka.bootstrap.servers": spark.conf.get("servers"),
                                                "topic": spark.conf.get("out_topic")})

@dlt.append_flow(target="out")
def publish():
    return dlt.read_stream("silver").select(F.col("id").cast("string").alias("value"))
"""


ROUNDS = ("bronze", "silver", "publish")  # the flow each round's kill aims at, 1 s after it printed "starting"


def test_killed_kafka_updates_lose_and_duplicate_nothing(spark: SparkSession, kafka_broker: KafkaBroker,
                                                         tmp_path: Path) -> None:
    topic = kafka_broker.create_topic("kill9_orders", partitions=2)
    out_topic = kafka_broker.create_topic("kill9_out")
    spec_file = write_spec(tmp_path, {"p.py": PIPELINE}, name="kafka_kill9",
                           configuration={"servers": kafka_broker.bootstrap_servers, "topic": topic,
                                          "out_topic": out_topic})
    spec = load_spec(spec_file)
    produced = 0
    killed_any = False
    for target in ROUNDS:
        ids = range(produced, produced + 1500)
        kafka_broker.produce(topic, [json.dumps({"id": i}) for i in ids], keys=[str(i % 7) for i in ids])
        produced += len(ids)
        killed = run_and_kill(spec_file, target, 1.0)
        killed_any = killed_any or killed.was_killed
        rerun = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
        assert rerun.succeeded, [(f.flow, f.error) for f in rerun.flows if f.error] or rerun.error
        for table in ("bronze", "silver"):
            got = [r.id for r in spark.read.format("delta").load(str(spec.tables_dir / table)).collect()]
            assert sorted(got) == list(range(produced)), (table, len(got), len(set(got)), killed.output())
        sent = [int(v) for _, v in kafka_broker.consume(out_topic) if v is not None]
        assert set(sent) == set(range(produced)), (len(sent), len(set(sent)), killed.output())  # none lost
        print(f"kill aimed at {target}: {len(sent) - len(set(sent))} records sent twice by the sink")
    assert killed_any, "no kill landed inside an update: this test checked nothing"

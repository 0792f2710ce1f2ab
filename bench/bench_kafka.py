"""Kafka → bronze: ``1,000,000 * --scale`` JSON records from a topic into a Delta table with an expectation.

A real broker (Apache Kafka's own server, ``framework.testing.kafka``) holds the records in a topic of two
partitions (written once, untimed, by Spark's Kafka sink; 0.1 % of the values are not JSON).

- Framework: one pipeline update (``run_update``, in this process, fresh storage every run) of a pipeline file
  whose bronze table reads ``spark.readStream.format("kafka")`` (``startingOffsets`` earliest), parses the value
  with ``from_json(CAST(value AS STRING), schema)`` and carries ``@dlt.expect("parsed", "id IS NOT NULL")``:
  what a user's update costs, with the driver-side Kafka check, the expectation's metrics and the event log.
- Baseline: the same read and projection hand-written in Structured Streaming, ``writeStream.format("delta")``
  to a fresh table and checkpoint, trigger available-now.

Both read every record in one available-now run; both tables are checked to hold every record. ``--warmup``
untimed runs of each side first (default 1), then ``--runs`` alternating (default 3); medians, the load
average before and after, and the ratio last (wanted: ≤ 1.05).

Run: ``.venv/bin/python -m bench.bench_kafka [--scale 1] [--runs 3] [--warmup 1]``
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from bench.harness import alternate, common_args, write_json

LIMIT = 1.05
RECORDS = 1_000_000
SCHEMA = "id BIGINT, ts TIMESTAMP, customer STRING, amount DOUBLE, qty INT, status STRING"
PIPELINE = '''
import dlt
from pyspark.sql import functions as F

@dlt.table
@dlt.expect("parsed", "id IS NOT NULL")
def bronze():
    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", spark.conf.get("servers"))
            .option("subscribe", spark.conf.get("topic"))
            .option("startingOffsets", "earliest")
            .load()
            .select(F.from_json(F.col("value").cast("string"), "{schema}").alias("v"), "partition", "offset")
            .select("v.*", "partition", "offset"))
'''


def produce(spark: Any, servers: str, topic: str, records: int) -> None:
    """``records`` JSON values (one in 1,000 not JSON) written to ``topic`` with Spark's Kafka sink."""
    values = spark.range(records, numPartitions=2).selectExpr(
        "CAST(id % 2 AS INT) AS partition",
        "CASE WHEN id % 1000 = 999 THEN concat('not json ', id) ELSE to_json(named_struct("
        "'id', id, 'ts', timestamp_seconds(1700000000 + id), 'customer', concat('c', id % 5000), "
        "'amount', (id % 10000) / 100.0, 'qty', CAST(id % 7 AS INT), 'status', element_at(array('new', 'paid', "
        "'shipped'), CAST(id % 3 + 1 AS INT)))) END AS value")
    values.write.format("kafka").option("kafka.bootstrap.servers", servers).option("topic", topic).save()


def main(argv: list[str] | None = None) -> int:
    parser = common_args(__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs of each side first (default 1)")
    args = parser.parse_args(argv)
    records = int(RECORDS * args.scale)
    print(f"load average before: {os.getloadavg()}", file=sys.stderr)
    from framework.runner.session import get_or_create_session
    from framework.runner.update import UpdateOptions, run_update
    from framework.spec import parse_spec
    from framework.testing.kafka import start_broker

    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-kafka-"))
    broker = start_broker(work / "broker")
    try:
        spark = get_or_create_session()
        topic = broker.create_topic("bench_orders", partitions=2)
        started = time.perf_counter()
        produce(spark, broker.bootstrap_servers, topic, records)
        print(f"produced {records:,} records in {time.perf_counter() - started:.1f}s", file=sys.stderr)
        (work / "pipeline").mkdir(exist_ok=True)
        (work / "pipeline" / "bronze.py").write_text(textwrap.dedent(PIPELINE.format(schema=SCHEMA)))

        def framework(i: int) -> None:
            storage = work / f"fw-{i}"
            spec = parse_spec({"name": "bench_kafka", "libraries": [{"glob": {"include": "pipeline/**"}}],
                               "storage": str(storage), "schema": f"bench_kafka_{i + 1}",
                               "configuration": {"servers": broker.bootstrap_servers, "topic": topic}},
                              source=str(work / "spec.yaml"), default_root=work)
            result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
            if not result.succeeded:
                raise SystemExit(f"framework update failed: {result.error or [f.error for f in result.flows]}")
            _check(spark, spec.tables_dir / "bronze", records)

        def baseline(i: int) -> None:
            from pyspark.sql import functions as F

            table = work / f"bl-{i}" / "bronze"
            query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap_servers)
                     .option("subscribe", topic).option("startingOffsets", "earliest").load()
                     .select(F.from_json(F.col("value").cast("string"), SCHEMA).alias("v"), "partition", "offset")
                     .select("v.*", "partition", "offset")
                     .writeStream.format("delta").option("checkpointLocation", str(table.parent / "checkpoint"))
                     .trigger(availableNow=True).start(str(table)))
            query.awaitTermination()
            _check(spark, table, records)

        for _ in range(args.warmup):
            framework(-1 - _)
            baseline(-1 - _)
            print("  warm-up of each side done (not counted)", file=sys.stderr, flush=True)
        result = alternate("kafka_bronze", framework, baseline, runs=args.runs)
        result.extra["records"] = f"{records:,}"
        result.extra["load average after"] = str(os.getloadavg())
        print(result.report(LIMIT))
        write_json(args.json, result)
    finally:
        broker.stop()
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def _check(spark: Any, table: Path, records: int) -> None:
    got = spark.read.format("delta").load(str(table)).count()
    if got != records:
        raise SystemExit(f"{table} holds {got:,} rows, expected {records:,}")


if __name__ == "__main__":
    sys.exit(main())

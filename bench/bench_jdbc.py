"""Benchmark: the ``jdbc_incremental`` source against Spark's own JDBC reader, on a real PostgreSQL.

Both implementations of the source are measured in the same run: ``jdbc_incremental`` as a local run reads it
(the JVM twin in the framework's jar, ``jvm/src/medallion/sources``) and ``jdbc_incremental_python`` (the Python
data source a Databricks pipeline registers: ADBC binary COPY → Arrow in Python workers). The limits apply to
the first; the second's figures follow as ``*_python``.

1. ``first_load``: every row of a ``1,000,000 * --scale``-row orders table. Framework: a
   ``spark.readStream.format(...)`` query (``numPartitions`` ranges of the watermark column), trigger
   available-now, fresh checkpoint. Baseline: Spark's batch
   ``spark.read.jdbc`` (the PostgreSQL JDBC driver) with the same partition count, partitioned on the primary
   key. Both sides write to Spark's ``noop`` sink, so the figures are the reads' own (a Delta write would add the
   same cost to both). Wanted: framework throughput ≥ 0.8 x the baseline's, i.e. time ratio ≤ 1.25.
2. ``incremental``: after each framework first load, 1 % of the rows change (``updated_at`` moves forward) and
   the same query runs again from its checkpoint: it must read exactly those rows (count checked) and cost at
   most 0.15 x the first load. PostgreSQL has an index on ``updated_at``, as a table read by watermark should.

3. ``update_floor`` (a reference, no limit): the same update against Spark's own streaming update of as many new
   rows, read from one new Parquet file added to a folder of the table's rows (``format("parquet")`` stream,
   available-now, ``noop`` sink), measured right after each framework update. It shows what any streaming query's
   update costs on the machine: start, offsets, planning, a one-task job, stop.

The throwaway PostgreSQL cluster comes from ``framework.testing.postgres`` (as in the tests). ``--warmup`` untimed
runs of each side come first (default 2; a framework run is a first load and an update, so that the JIT has seen
a query restart from its checkpoint as often as a first load). Medians of ``--runs``; every run and the load
average are printed; the ratios come last.

Run: ``.venv/bin/python -m bench.bench_jdbc [--scale 1] [--runs 3] [--warmup 2] [--partitions 2]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from pyspark.sql import SparkSession

from bench.harness import Comparison, common_args, write_json
from framework.runner.session import get_or_create_session
from framework.sources import PYTHON_SOURCE_NAME, SOURCE_NAME, register_python_source, register_sources
from framework.testing.postgres import PostgresDatabase, create_database, start_server

ROWS = 1_000_000


def _load_table(db: PostgresDatabase, rows: int) -> None:
    db.execute(
        "CREATE TABLE orders (order_id bigint PRIMARY KEY, customer text, amount numeric(10,2), status text, "
        "updated_at timestamptz NOT NULL)",
        f"INSERT INTO orders SELECT g, 'customer-' || (g % 5000), (g % 10000) / 100.0, "
        f"(ARRAY['new','paid','shipped'])[1 + g % 3], timestamptz '2024-01-01' + g * interval '1 second' "
        f"FROM generate_series(1, {rows}) g",
        "CREATE INDEX orders_updated_at ON orders (updated_at)",
        "ANALYZE orders")


def _framework_load(spark: SparkSession, db: PostgresDatabase, checkpoint: Path, partitions: int,
                    source: str = SOURCE_NAME) -> tuple[int, float]:
    """One available-now run of the ``source`` stream: the rows it read, and the seconds its micro-batches
    took (Spark's ``triggerExecution``: offsets, planning, the read; not the query's start and stop)."""
    query = (spark.readStream.format(source).options(**db.options)
             .option("dbtable", "public.orders").option("watermarkColumn", "updated_at")
             .option("numPartitions", str(partitions)).load()
             .writeStream.format("noop").option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    batches = [p for p in query.recentProgress if p.numInputRows]
    return (sum(int(p.numInputRows) for p in batches),
            sum(p.durationMs.get("triggerExecution", 0) for p in batches) / 1000)


def _baseline_load(spark: SparkSession, db: PostgresDatabase, rows: int, partitions: int) -> None:
    props = {"user": db.user, "password": db.password, "driver": "org.postgresql.Driver", "fetchsize": "10000"}
    df = spark.read.jdbc(db.url, "public.orders", column="order_id", lowerBound=1, upperBound=rows,
                         numPartitions=partitions, properties=props)
    df.write.format("noop").mode("overwrite").save()


class FileStreamFloor:
    """Spark's own file stream over Parquet copies of the table's rows: ``rows`` in 100 files, then one new file
    of 1 % of them before each update."""

    def __init__(self, spark: SparkSession, db: PostgresDatabase, work: Path, rows: int) -> None:
        self.spark, self.folder, self.changes = spark, work / "floor-table", work / "floor-changes"
        table = spark.read.jdbc(db.url, "public.orders", properties={**db.options, "driver": "org.postgresql.Driver"})
        table.repartition(100).write.mode("overwrite").parquet(str(self.folder))
        table.limit(rows // 100).coalesce(1).write.mode("overwrite").parquet(str(self.changes))
        self.change_file = next(self.changes.glob("*.parquet"))
        self.schema = table.schema
        self.runs = 0

    def _load(self, checkpoint: Path) -> int:
        query = (self.spark.readStream.format("parquet").schema(self.schema).load(str(self.folder))
                 .writeStream.format("noop").option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        return sum(int(p.numInputRows) for p in query.recentProgress)

    def update(self) -> float:
        """A first load from a fresh checkpoint (untimed), one new file, then the timed update."""
        checkpoint = self.folder.parent / f"floor-checkpoint-{self.runs}"
        self._load(checkpoint)
        shutil.copy(self.change_file, self.folder / f"change-{self.runs}.parquet")
        self.runs += 1
        start = time.perf_counter()
        read = self._load(checkpoint)
        elapsed = time.perf_counter() - start
        if read != self.spark.read.parquet(str(self.changes)).count():
            raise SystemExit(f"the file stream's update read {read} rows")
        return elapsed


def _change_one_percent(db: PostgresDatabase, rows: int, run: int) -> int:
    step = 100
    db.execute(f"UPDATE orders SET amount = amount + 1, updated_at = timestamptz '2030-01-01' + "
               f"interval '{run + 1} day' + order_id * interval '1 millisecond' "
               f"WHERE order_id % {step} = {run % step}")
    return rows // step


def main(argv: list[str] | None = None) -> int:
    parser = common_args(__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=2, help="read partitions on both sides (default 2)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs of each side first (default 2)")
    args = parser.parse_args(argv)
    rows = int(ROWS * args.scale)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-jdbc-"))
    server = start_server()
    try:
        db = create_database(server)
        started = time.perf_counter()
        _load_table(db, rows)
        print(f"generated {rows:,} rows in PostgreSQL in {time.perf_counter() - started:.1f}s", file=sys.stderr)
        spark = get_or_create_session()
        register_sources(spark)
        register_python_source(spark)
        changes = iter(range(10**6))  # every change moves rows past every earlier watermark
        floor = Comparison("update_floor")  # framework: the update; "baseline": Spark's file stream update
        first, incremental = _run(spark, db, rows, work, args, SOURCE_NAME, changes,
                                  FileStreamFloor(spark, db, work, rows), floor)
        first_py, incremental_py = _run(spark, db, rows, work, args, PYTHON_SOURCE_NAME, changes)
    finally:
        server.stop()
        shutil.rmtree(server.folder, ignore_errors=True)
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}; {rows:,} rows, "
          f"{args.partitions} partitions each side, {args.warmup} untimed runs of each side first")
    print(incremental_py.report())
    print(first_py.report())
    print(f"[first_load_python] throughput framework/baseline = {first_py.baseline_median / first_py.framework_median:.3f}")
    print(floor.report())
    print(incremental.report(limit=0.15))
    print(first.report(limit=1.25))
    throughput = first.baseline_median / first.framework_median
    print(f"[first_load] throughput framework/baseline = {throughput:.3f}  (wanted >= 0.80: "
          f"{'OK' if throughput >= 0.8 else 'UNDER'})")
    write_json(args.json, first, incremental, floor, first_py, incremental_py)
    return 0


def _run(spark: SparkSession, db: PostgresDatabase, rows: int, work: Path, args: argparse.Namespace,
         source: str, changes: Iterator[int], floor: FileStreamFloor | None = None,
         floor_figures: Comparison | None = None) -> tuple[Comparison, Comparison]:
    suffix = "_python" if source == PYTHON_SOURCE_NAME else ""
    first = Comparison(f"first_load{suffix}")
    incremental = Comparison(f"incremental{suffix}")  # framework: the update; "baseline": the same flow's first load
    for w in range(args.warmup):  # JIT, workers, caches: not counted
        checkpoint = work / f"warmup{suffix}-{w}"
        _framework_load(spark, db, checkpoint, args.partitions, source)
        _change_one_percent(db, rows, next(changes))
        _framework_load(spark, db, checkpoint, args.partitions, source)
        _baseline_load(spark, db, rows, args.partitions)
        if floor is not None:
            floor.update()
    read_counts, batch_s = [], []
    for i in range(args.runs):
        checkpoint = work / f"checkpoint{suffix}-{i}"
        shutil.rmtree(checkpoint, ignore_errors=True)
        order = ["framework", "baseline"] if i % 2 == 0 else ["baseline", "framework"]
        for side in order:
            start = time.perf_counter()
            if side == "framework":
                read, batch = _framework_load(spark, db, checkpoint, args.partitions, source)
                batch_s.append(batch)
                assert read >= rows, f"the first load read {read} rows, not {rows}"
            else:
                _baseline_load(spark, db, rows, args.partitions)
            elapsed = time.perf_counter() - start
            (first.framework_s if side == "framework" else first.baseline_s).append(elapsed)
            print(f"  {source} run {i + 1}/{args.runs} first load {side}: {elapsed:.2f}s", file=sys.stderr, flush=True)
        changed = _change_one_percent(db, rows, next(changes))
        start = time.perf_counter()
        read, _ = _framework_load(spark, db, checkpoint, args.partitions, source)
        elapsed = time.perf_counter() - start
        if read != changed:
            raise SystemExit(f"the update read {read} rows; {changed} changed")
        read_counts.append(read)
        incremental.framework_s.append(elapsed)
        incremental.baseline_s.append(first.framework_s[-1])
        print(f"  {source} run {i + 1}/{args.runs} update after 1% changed: {elapsed:.2f}s ({read} rows)",
              file=sys.stderr)
        if floor is not None and floor_figures is not None:
            floor_figures.framework_s.append(elapsed)
            floor_figures.baseline_s.append(floor.update())
            print(f"  run {i + 1}/{args.runs} Spark's file stream update: {floor_figures.baseline_s[-1]:.2f}s",
                  file=sys.stderr)
    incremental.extra["rows read by each update (= rows changed)"] = read_counts
    incremental.extra["updates, seconds"] = [round(x, 3) for x in incremental.framework_s]
    first.extra["rows per second, medians"] = (f"framework {rows / statistics.median(first.framework_s):,.0f}, "
                                               f"baseline {rows / statistics.median(first.baseline_s):,.0f}")
    overhead = statistics.median(f - b for f, b in zip(first.framework_s, batch_s, strict=True))
    first.extra["stream's micro-batch time (triggerExecution), median"] = (
        f"{statistics.median(batch_s):.2f}s: read throughput {statistics.median(first.baseline_s) / statistics.median(batch_s):.3f} "
        f"x the baseline's; query start and stop {overhead:.2f}s")
    return first, incremental


if __name__ == "__main__":
    sys.exit(main())

"""Issue 35's A/B: the framework's driver-side Delta writer (``framework.storage.driver``) against delta-rs
(``deltalake.write_deltalake``), the library its field maintains, on the writes the driver makes.

Both append to tables that delta-spark created (the protocol and features the framework's tables have) on the
local file system, with Delta's idempotent ``txn`` (app id, version) as a stream's batch carries it:

* ``small``: 10 rows per commit in a warm process (an event-log append, a small stream batch), the median of
  ``--commits`` commits each;
* ``large``: ``--large-rows`` rows per commit, the median of ``--runs`` commits each;
* ``read``: a 10-row commit, then delta-spark's read of the table (its row count) in the warm session: what the
  next flow of an update pays to see the commit (Delta takes protocol and metadata from a version's checksum, which
  the framework's writer writes and delta-rs does not, instead of replaying the log with Spark jobs);
* ``cold``: a fresh Python process that imports the writer and makes one 10-row commit (what a cold
  ``medallion run`` pays before its first driver write), the median of ``--runs`` processes each.

Every run alternates the two writers; the ratio is framework / delta-rs (below 1: ours is faster). At the end
delta-spark reads both tables (row counts, history) and delta-rs reads every version of the framework's table,
so a writer that wrote something the other engine cannot read fails the benchmark.

Run: ``.venv/bin/python -m bench.bench_driver_writer [--commits 30] [--runs 5] [--large-rows 200000]``
(needs ``deltalake``, in the ``dev`` extra).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SMALL_ROWS = 10
APP_ID = "bench-driver-writer"

# A cold run has pyspark and pyarrow imported before its first driver write: only the writer's import and its
# first commit are timed.
_COLD_OURS = """
import sys, time
import pyarrow as pa
from pyspark.sql.types import LongType, StringType, StructField, StructType
t = time.perf_counter()
from framework.storage.driver import append_arrow
schema = StructType([StructField("id", LongType()), StructField("name", StringType())])
data = pa.table({"id": pa.array(range(10), pa.int64()), "name": pa.array(["x"] * 10)})
append_arrow(sys.argv[1], schema, data, txn=("cold", int(sys.argv[2])))
print(time.perf_counter() - t)
"""
_COLD_DELTA_RS = """
import sys, time
import pyarrow as pa
from pyspark.sql.types import LongType, StringType, StructField, StructType
t = time.perf_counter()
from deltalake import CommitProperties, Transaction, write_deltalake
data = pa.table({"id": pa.array(range(10), pa.int64()), "name": pa.array(["x"] * 10)})
write_deltalake(sys.argv[1], data, mode="append",
                commit_properties=CommitProperties(app_transactions=[Transaction("cold", int(sys.argv[2]))]))
print(time.perf_counter() - t)
"""


def _data(rows: int, start: int = 0):  # type: ignore[no-untyped-def]
    import pyarrow as pa

    return pa.table({"id": pa.array(range(start, start + rows), pa.int64()),
                     "name": pa.array([f"n{i % 97}" for i in range(start, start + rows)])})


def _schema():  # type: ignore[no-untyped-def]
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType([StructField("id", LongType()), StructField("name", StringType())])


def ours(path: str, rows: int, version: int) -> None:
    from framework.storage.driver import append_arrow

    assert append_arrow(path, _schema(), _data(rows, version * rows), txn=(APP_ID, version)) is not None


def delta_rs(path: str, rows: int, version: int) -> None:
    from deltalake import CommitProperties, Transaction, write_deltalake

    write_deltalake(path, _data(rows, version * rows), mode="append",
                    commit_properties=CommitProperties(app_transactions=[Transaction(APP_ID, version)]))


def _create(spark, path: str) -> None:  # type: ignore[no-untyped-def]
    spark.createDataFrame([], "id BIGINT, name STRING").write.format("delta").save(path)


def alternate(name: str, runs: int, tables: dict[str, str], write: dict[str, Callable[[str, int], float]]
              ) -> dict[str, list[float]]:
    """Time ``write[side](table, i)`` for ``runs`` rounds, the order flipped every round."""
    times: dict[str, list[float]] = {side: [] for side in write}
    for i in range(runs):
        order = list(write) if i % 2 == 0 else list(reversed(write))
        for side in order:
            times[side].append(write[side](tables[side], i))
    for side, values in times.items():
        print(f"[{name}] {side}: median {statistics.median(values) * 1000:.1f} ms over {len(values)}", flush=True)
    ratio = statistics.median(times["framework"]) / statistics.median(times["delta-rs"])
    print(f"[{name}] ratio framework/delta-rs = {ratio:.3f}", flush=True)
    return times


def _timed(fn: Callable[[str, int, int], None], rows: int, offset: int) -> Callable[[str, int], float]:
    def run(path: str, i: int) -> float:
        start = time.perf_counter()
        fn(path, rows, offset + i)
        return time.perf_counter() - start
    return run


def _cold(script: str) -> Callable[[str, int], float]:
    """The seconds the script prints: its writer's import and first commit, in a fresh process."""
    def run(path: str, i: int) -> float:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-c", script, path, str(i)], check=True, env=env, cwd=REPO,
                              capture_output=True, text=True)
        return float(done.stdout.strip().splitlines()[-1])
    return run


def _then_read(spark, fn: Callable[[str, int, int], None], offset: int  # type: ignore[no-untyped-def]
               ) -> Callable[[str, int], float]:
    def run(path: str, i: int) -> float:
        start = time.perf_counter()
        fn(path, SMALL_ROWS, offset + i)
        spark.read.format("delta").load(path).count()
        return time.perf_counter() - start
    return run


def verify(spark, tables: dict[str, str], expected_rows: int) -> None:  # type: ignore[no-untyped-def]
    """delta-spark reads both tables whole and their history; delta-rs reads every version of ours."""
    from deltalake import DeltaTable

    for side, path in tables.items():
        count = spark.read.format("delta").load(path).count()
        history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").count()
        print(f"[verify] {side}: {count} rows, {history} versions (delta-spark)", flush=True)
        assert count == expected_rows, f"{side}: {count} rows, expected {expected_rows}"
    ours_table = DeltaTable(tables["framework"])
    for version in range(ours_table.version() + 1):
        DeltaTable(tables["framework"], version=version).to_pyarrow_table()
    print(f"[verify] delta-rs read all {ours_table.version() + 1} versions of the framework's table", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=30)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--large-rows", type=int, default=200_000)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}", flush=True)
    from framework.runner.session import get_or_create_session

    spark = get_or_create_session()  # the project's session: its jars and log store
    with tempfile.TemporaryDirectory(prefix="bench-writer-") as root:
        tables = {side: str(Path(root) / side) for side in ("framework", "delta-rs")}
        for path in tables.values():
            _create(spark, path)
        writers = {"framework": ours, "delta-rs": delta_rs}
        for side, fn in writers.items():  # imports and first open, untimed
            fn(tables[side], SMALL_ROWS, 0)
        alternate("small", args.commits, tables, {s: _timed(f, SMALL_ROWS, 1) for s, f in writers.items()})
        large = args.commits + 1  # txn versions only grow: a lower one is a replayed batch, skipped
        alternate("large", args.runs, tables, {s: _timed(f, args.large_rows, large) for s, f in writers.items()})
        reads = large + args.runs
        alternate("read", args.runs, tables, {s: _then_read(spark, f, reads) for s, f in writers.items()})
        alternate("cold", args.runs, tables, {"framework": _cold(_COLD_OURS), "delta-rs": _cold(_COLD_DELTA_RS)})
        expected = SMALL_ROWS * (1 + args.commits + 2 * args.runs) + args.large_rows * args.runs
        verify(spark, tables, expected)
    print(f"load average at end: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()

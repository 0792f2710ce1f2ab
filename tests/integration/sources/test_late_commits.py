"""Transactions that commit in another order than they took their watermark values, against the real
PostgreSQL with two connections, for both implementations of ``jdbc_incremental``: every row is loaded once,
also when a batch is run again from its checkpoint (what a kill -9 between the write and the commit leaves),
without a ``lookback`` (framework/sources/inflight.py has the rule and its argument).

PostgreSQL facts these tests rest on (checked on the server they run against): a row's ``xmin`` is the id of the
(sub)transaction that wrote it; ``pg_current_snapshot()`` lists only top-level ids in progress, and not one
at or above its ``xmax`` even while it runs (a transaction whose id is above the last completed one);
``pg_locks`` shows every running (sub)transaction's lock on its own id; an identity default is taken when the
row is inserted, ``now()`` when the transaction starts."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from framework.sources import PYTHON_SOURCE_NAME, SOURCE_NAME, register_python_source
from framework.sources.state import read_offsets

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.testing.postgres import PostgresDatabase

pytestmark = pytest.mark.spark

TABLE = (
    "CREATE TABLE items (seq bigint GENERATED ALWAYS AS IDENTITY, name text, "
    "at timestamptz NOT NULL DEFAULT now())"
)


@pytest.fixture(autouse=True)
def _python_source(spark: SparkSession) -> None:
    register_python_source(spark)


def _run(
    spark: SparkSession, db: PostgresDatabase, source: str, out: Path, column: str, **options: str
) -> None:
    """One available-now run; each batch's rows go to ``out/batches/<batch id>/<attempt>`` (a batch run again
    from its checkpoint writes a second attempt)."""

    def write(df: DataFrame, batch: int) -> None:
        df.write.parquet(str(out / "batches" / str(batch) / uuid.uuid4().hex))

    query = (
        spark.readStream.format(source)
        .options(**db.options)
        .option("dbtable", "public.items")
        .option("watermarkColumn", column)
        .options(**options)
        .load()
        .writeStream.foreachBatch(write)
        .option("checkpointLocation", str(out / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


def _attempts(spark: SparkSession, out: Path) -> dict[int, list[list[str]]]:
    """The names read by each attempt of each batch, in the order of the batches."""
    found: dict[int, list[list[str]]] = {}
    folders = out / "batches"
    for batch in (
        sorted((p for p in folders.iterdir()), key=lambda p: int(p.name)) if folders.is_dir() else []
    ):
        attempts = sorted(batch.iterdir(), key=lambda p: p.stat().st_mtime)
        found[int(batch.name)] = [
            sorted(r.name for r in spark.read.parquet(str(a)).collect()) for a in attempts
        ]
    return found


def _loaded(attempts: dict[int, list[list[str]]]) -> list[str]:
    """Every row the sink kept: the last attempt of each batch (Spark commits that one)."""
    return sorted(name for runs in attempts.values() for name in runs[-1])


def _late_transaction(db: PostgresDatabase) -> Any:
    """Transaction A: a row, a row in a subtransaction, left open; then B inserts and commits after it."""
    a = db.connect()
    cur = a.cursor()
    cur.execute("INSERT INTO items (name) VALUES ('a1')")  # seq 4, at = A's start
    cur.execute("SAVEPOINT s")
    cur.execute("INSERT INTO items (name) VALUES ('a2')")  # seq 5, written by a subtransaction
    cur.execute("RELEASE SAVEPOINT s")
    time.sleep(0.01)  # B's now() later than A's
    db.execute("INSERT INTO items (name) VALUES ('b')")  # seq 6, committed first
    return a


@pytest.mark.parametrize("column", ["seq", "at"])
@pytest.mark.parametrize("source", [SOURCE_NAME, PYTHON_SOURCE_NAME])
def test_a_transaction_that_commits_late_is_loaded_once(
    spark: SparkSession, postgres_db: PostgresDatabase, tmp_path: Path, source: str, column: str
) -> None:
    db = postgres_db
    db.execute(TABLE, "INSERT INTO items (name) VALUES ('x1'), ('x2'), ('x3')")
    a = _late_transaction(db)
    try:
        _run(spark, db, source, tmp_path, column)  # reads up to b, A still open
        first = read_offsets(tmp_path / "checkpoint" / "offsets" / "0")[0]
        a.commit()
    finally:
        a.close()
    assert _loaded(_attempts(spark, tmp_path)) == ["b", "x1", "x2", "x3"]
    assert first["inFlight"] and first["inFlight"][0]["after"] is None  # A's ids, rows anywhere below
    _run(spark, db, source, tmp_path, column)  # A committed: its two rows, nothing else
    assert _attempts(spark, tmp_path)[1] == [["a1", "a2"]]
    assert "inFlight" not in read_offsets(tmp_path / "checkpoint" / "offsets" / "1")[0]
    _run(spark, db, source, tmp_path, column)  # nothing new: no batch
    assert sorted(_attempts(spark, tmp_path)) == [0, 1]
    db.execute("INSERT INTO items (name) VALUES ('c')")
    _run(spark, db, source, tmp_path, column)
    assert _loaded(_attempts(spark, tmp_path)) == ["a1", "a2", "b", "c", "x1", "x2", "x3"]


@pytest.mark.parametrize("column", ["seq", "at"])
@pytest.mark.parametrize("source", [SOURCE_NAME, PYTHON_SOURCE_NAME])
def test_a_batch_run_again_after_the_late_commit_reads_the_same_rows(
    spark: SparkSession, postgres_db: PostgresDatabase, tmp_path: Path, source: str, column: str
) -> None:
    db = postgres_db
    db.execute(TABLE, "INSERT INTO items (name) VALUES ('x1')")
    _run(spark, db, source, tmp_path, column)  # batch 0: x1, nothing in flight
    a = _late_transaction(db)
    try:
        _run(spark, db, source, tmp_path, column)  # batch 1: b, A in flight
        (tmp_path / "checkpoint" / "commits" / "1").unlink()  # as if killed before the commit
        a.commit()
    finally:
        a.close()
    assert read_offsets(tmp_path / "checkpoint" / "offsets" / "1")[0]["inFlight"][0]["after"] is not None
    _run(spark, db, source, tmp_path, column)  # batch 1 again (same offsets, same rows), then A's rows
    attempts = _attempts(spark, tmp_path)
    assert attempts[1] == [["b"], ["b"]]
    assert attempts[2] == [["a1", "a2"]]
    assert _loaded(attempts) == ["a1", "a2", "b", "x1"]


@pytest.mark.parametrize(
    ("first", "then"), [(PYTHON_SOURCE_NAME, SOURCE_NAME), (SOURCE_NAME, PYTHON_SOURCE_NAME)]
)
def test_a_checkpoint_with_transactions_in_flight_resumes_in_the_other_twin(
    spark: SparkSession, postgres_db: PostgresDatabase, tmp_path: Path, first: str, then: str
) -> None:
    db = postgres_db
    db.execute(TABLE, "INSERT INTO items (name) VALUES ('x1')")
    a = _late_transaction(db)
    try:
        _run(spark, db, first, tmp_path, "seq")
        a.commit()
    finally:
        a.close()
    _run(spark, db, then, tmp_path, "seq")
    attempts = _attempts(spark, tmp_path)
    assert attempts == {0: [["b", "x1"]], 1: [["a1", "a2"]]}
    offsets = [read_offsets(tmp_path / "checkpoint" / "offsets" / str(n))[0] for n in (0, 1)]
    assert offsets[0]["watermark"] == offsets[1]["watermark"] == "4"  # batch 1: only the rows that ended
    assert offsets[0]["inFlight"] and "inFlight" not in offsets[1]


@pytest.mark.parametrize("lookback", ["1", "3"])
@pytest.mark.parametrize("source", [SOURCE_NAME, PYTHON_SOURCE_NAME])
def test_with_a_lookback_a_late_commit_is_still_read_once(
    spark: SparkSession, postgres_db: PostgresDatabase, tmp_path: Path, source: str, lookback: str
) -> None:
    # seq: x1 1, a1 2, a2 3, b 4, c 5. The second batch reads (4 - lookback, 5] and A's rows below that: with
    # lookback 1, a1 and a2 by the rows of the transactions that ended; with 3, by the range itself
    db = postgres_db
    db.execute(TABLE, "INSERT INTO items (name) VALUES ('x1')")
    a = _late_transaction(db)
    try:
        _run(spark, db, source, tmp_path, "seq", lookback=lookback)
        a.commit()
    finally:
        a.close()
    db.execute("INSERT INTO items (name) VALUES ('c')")
    _run(spark, db, source, tmp_path, "seq", lookback=lookback)
    # b (seq 4) is within either lookback: read again on purpose; A's rows once either way
    assert _loaded(_attempts(spark, tmp_path)) == sorted(["x1", "b", "a1", "a2", "c", "b"])


def test_the_offset_query_finds_what_the_snapshot_does_not_list(postgres_db: PostgresDatabase) -> None:
    from framework.sources import pgclient
    from framework.sources.inflight import in_flight

    db = postgres_db
    db.execute(TABLE)
    a = db.connect()
    try:
        cur = a.cursor()
        cur.execute("INSERT INTO items (name) VALUES ('a1')")
        cur.execute("SAVEPOINT s")
        cur.execute("INSERT INTO items (name) VALUES ('a2')")
        cur.execute("RELEASE SAVEPOINT s")  # a released subtransaction keeps no lock of its own
        ((bound, snapshot, running),) = db.query(pgclient.offset_sql("SELECT max(seq)::text FROM items"))
        a.commit()
    finally:
        a.close()
    assert bound is None  # A's rows are invisible
    # no id completed after A's: A is at or above the snapshot's xmax, so the snapshot lists nothing in progress
    assert str(snapshot).endswith(":")
    xmins = {int(x) for (x,) in db.query("SELECT xmin::text FROM items")}
    assert len(xmins) == 2 and xmins == {x % 2**32 for x in in_flight(str(snapshot), running)}

"""The JVM twin's read ahead (``jvm/src/medallion/sources/ReadAhead.java``): in local mode a micro-batch of one
range starts its database read on the driver as soon as ``latestOffset`` knows the range, and the batch's task
takes the rows over. Every row still arrives once; a range longer than ``fetchSize`` goes on through the open
cursor; a read ahead that no task claims closes its transaction; a failure ahead or later in the cursor is the
batch's failure with the database's message; a batch of several ranges is not read ahead."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from framework.sources import SOURCE_NAME

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.testing.postgres import PostgresDatabase

pytestmark = pytest.mark.spark


def _counts(spark: SparkSession) -> dict[str, int]:
    counts = spark.sparkContext._jvm.medallion.sources.JdbcIncremental.readAheadCounts()  # type: ignore[union-attr]
    return {k: int(counts.get(k)) for k in ("started", "claimed", "dropped")}


def _grown(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in before}


def _source(spark: SparkSession, db: PostgresDatabase, **options: str) -> DataFrame:
    return (spark.readStream.format(SOURCE_NAME).options(**db.options).option("dbtable", "public.items")
            .option("watermarkColumn", "seq").options(**options).load())


def _to_parquet(spark: SparkSession, db: PostgresDatabase, out: Path, **options: str) -> list[Any]:
    query = (_source(spark, db, **options).writeStream.format("parquet").option("path", str(out / "data"))
             .option("checkpointLocation", str(out / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination()
    return sorted(r[0] for r in spark.read.parquet(str(out / "data")).select("seq").collect())


def _items(db: PostgresDatabase, rows: int) -> None:
    db.execute("CREATE TABLE items (seq bigint, name text)",
               f"INSERT INTO items SELECT g, 'n' || g FROM generate_series(1, {rows}) g", "ANALYZE items")


def _open_transactions(db: PostgresDatabase, wait: float = 0) -> int:
    """Server sessions of the test's database holding a transaction open (a read's cursor), after waiting up to
    ``wait`` seconds for them to end."""
    deadline = time.monotonic() + wait
    while True:
        rows = db.query("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                        "AND state LIKE 'idle in transaction%' AND pid <> pg_backend_pid()")
        if not rows[0][0] or time.monotonic() > deadline:
            return int(rows[0][0])
        time.sleep(0.1)


def test_a_batch_of_one_range_is_read_ahead_and_each_row_arrives_once(
        spark: SparkSession, postgres_db: PostgresDatabase, tmp_path: Path) -> None:
    db = postgres_db
    _items(db, 30)
    before = _counts(spark)
    # fetchSize 8: the read ahead holds 8 rows, the task reads the other 22 on through the cursor
    assert _to_parquet(spark, db, tmp_path, fetchSize="8") == list(range(1, 31))
    db.execute("INSERT INTO items SELECT g, 'n' || g FROM generate_series(31, 35) g")
    assert _to_parquet(spark, db, tmp_path, fetchSize="8") == list(range(1, 36))
    assert _grown(before, _counts(spark)) == {"started": 2, "claimed": 2, "dropped": 0}
    assert _open_transactions(db) == 0


def test_a_read_ahead_no_task_claims_is_dropped_with_its_transaction(
        spark: SparkSession, postgres_db: PostgresDatabase, tmp_path: Path) -> None:
    db = postgres_db
    _items(db, 20)
    before = _counts(spark)

    def refuse(batch: DataFrame, batch_id: int) -> None:  # the batch fails before any task reads
        raise RuntimeError("the sink is down")

    checkpoint = tmp_path / "checkpoint"
    query = (_source(spark, db, fetchSize="5").writeStream.foreachBatch(refuse)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    with pytest.raises(Exception, match="the sink is down"):
        query.awaitTermination()
    assert _grown(before, _counts(spark)) == {"started": 1, "claimed": 0, "dropped": 1}
    assert _open_transactions(db, wait=30) == 0  # closed when the read ahead's own read of 5 rows ends
    # the failed batch's offsets are logged: the next run of the query reads its rows, each once
    got: list[int] = []
    query = (_source(spark, db, fetchSize="5").writeStream
             .foreachBatch(lambda batch, _: got.extend(r[0] for r in batch.select("seq").collect()))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    assert sorted(got) == list(range(1, 21))
    # the batch logged before the restart is planned again without a read ahead
    assert _grown(before, _counts(spark)) == {"started": 1, "claimed": 0, "dropped": 1}


@pytest.mark.parametrize("bad_seq", [3, 25], ids=["in the rows read ahead", "in the rest of the cursor"])
def test_a_read_failing_ahead_or_later_fails_the_batch_with_the_database_error(
        spark: SparkSession, postgres_db: PostgresDatabase, tmp_path: Path, bad_seq: int) -> None:
    from pyspark.errors import StreamingQueryException

    db = postgres_db
    _items(db, 30)
    before = _counts(spark)
    query = (spark.readStream.format(SOURCE_NAME).options(**db.options).option("watermarkColumn", "seq")
             .option("query", f"SELECT seq, 10 / (seq - {bad_seq}) AS x FROM items").option("fetchSize", "8")
             .load().writeStream.format("noop").option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    with pytest.raises(StreamingQueryException) as failed:
        query.awaitTermination()
    text = str(failed.value)
    assert "PostgreSQL refused to read" in text and "division by zero" in text, text
    assert db.password not in text
    assert _grown(before, _counts(spark)) == {"started": 1, "claimed": 1, "dropped": 0}
    assert _open_transactions(db, wait=30) == 0  # the failed reader's connection is closed


def test_a_batch_of_several_ranges_is_not_read_ahead(spark: SparkSession, postgres_db: PostgresDatabase,
                                                     tmp_path: Path) -> None:
    db = postgres_db
    # more rows than one range holds (50,000 by the planner's estimate): two ranges, each read by its task
    _items(db, 120000)
    before = _counts(spark)
    got = _to_parquet(spark, db, tmp_path, numPartitions="2")
    assert len(got) == 120000 and got[0] == 1 and got[-1] == 120000 and len(set(got)) == 120000
    assert _grown(before, _counts(spark))["started"] == 0

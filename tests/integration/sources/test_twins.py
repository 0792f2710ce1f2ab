"""The two implementations of ``jdbc_incremental`` agree: the JVM twin that local runs read
(``jvm/src/medallion/sources``) and the Python data source a Databricks pipeline registers, here as
``jdbc_incremental_python``. Same rows, same offsets batch by batch, and a checkpoint written by either resumes
in the other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from framework.sources import PYTHON_SOURCE_NAME, SOURCE_NAME, register_python_source
from framework.sources.state import read_offsets

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.testing.postgres import PostgresDatabase

pytestmark = pytest.mark.spark

ITEMS = ("CREATE TABLE items (seq bigint, name text, amount numeric, meta jsonb, local_ts timestamp, "
         "at timestamptz, day date, raw bytea, flag boolean, id uuid)")


@pytest.fixture(autouse=True)
def _python_source(spark: SparkSession) -> None:
    register_python_source(spark)


def _stream(spark: SparkSession, db: PostgresDatabase, source: str, out: Path, **options: str) -> list[str]:
    """One available-now run into a Parquet folder (checkpoint beside it); the end offset of each batch it ran,
    from the checkpoint's offset log."""
    offsets = out / "checkpoint" / "offsets"
    before = set(offsets.iterdir()) if offsets.is_dir() else set()
    query = (spark.readStream.format(source).options(**db.options).option("dbtable", "public.items")
             .option("watermarkColumn", "seq").options(**options).load()
             .writeStream.format("parquet").option("path", str(out / "data"))
             .option("checkpointLocation", str(out / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination()
    ran = sorted((p for p in offsets.iterdir() if p.name.isdigit() and p not in before), key=lambda p: int(p.name))
    return [json.dumps(read_offsets(p)[0]) for p in ran]


def _rows(spark: SparkSession, out: Path) -> list[tuple[Any, ...]]:
    df = spark.read.parquet(str(out / "data"))
    return sorted(tuple(r) for r in df.collect())


def _insert(db: PostgresDatabase, first: int, last: int) -> None:
    db.execute(f"INSERT INTO items SELECT g / 2, 'n' || g, g / 7.0, '{{\"g\": 1}}', "
               f"timestamp '2024-01-01 10:00' + g * interval '1 minute', "
               f"timestamptz '2024-01-01 10:00+02' + g * interval '1 second', date '2024-02-01' + g, "
               f"'\\x0102'::bytea, g % 2 = 0, md5(g::text)::uuid FROM generate_series({first}, {last}) g")


def test_both_read_the_same_rows_in_the_same_batches(spark: SparkSession, postgres_db: PostgresDatabase,
                                                     tmp_path: Path) -> None:
    db = postgres_db
    db.execute(ITEMS, "INSERT INTO items (seq, name) VALUES (NULL, 'no watermark')")
    _insert(db, 1, 40)  # seq = g / 2: pairs of equal watermarks, which a batch end never splits
    options = {"maxRowsPerBatch": "7", "lookback": "1", "numPartitions": "2"}
    offsets = {s: _stream(spark, db, s, tmp_path / s, **options) for s in (SOURCE_NAME, PYTHON_SOURCE_NAME)}
    assert offsets[SOURCE_NAME] == offsets[PYTHON_SOURCE_NAME]
    # the 7th row has seq 3 (seq = g / 2): the batch ends there, with both rows of seq 3
    assert offsets[SOURCE_NAME][:2] == ['{"watermark": "3", "nullRows": 1}', '{"watermark": "7", "nullRows": 1}']
    _insert(db, 41, 50)
    again = {s: _stream(spark, db, s, tmp_path / s, **options) for s in (SOURCE_NAME, PYTHON_SOURCE_NAME)}
    assert again[SOURCE_NAME] == again[PYTHON_SOURCE_NAME] and again[SOURCE_NAME]
    jvm, python = _rows(spark, tmp_path / SOURCE_NAME), _rows(spark, tmp_path / PYTHON_SOURCE_NAME)
    assert jvm == python
    assert len(jvm) > 50 and {r[0] for r in jvm} == set(range(0, 26))  # lookback reads rows again; never NULL
    df = spark.read.parquet(str(tmp_path / SOURCE_NAME / "data"))
    assert spark.read.parquet(str(tmp_path / PYTHON_SOURCE_NAME / "data")).schema == df.schema


@pytest.mark.parametrize(("first", "then"), [(PYTHON_SOURCE_NAME, SOURCE_NAME), (SOURCE_NAME, PYTHON_SOURCE_NAME)])
def test_a_checkpoint_of_one_resumes_in_the_other(spark: SparkSession, postgres_db: PostgresDatabase, tmp_path: Path,
                                                  first: str, then: str) -> None:
    db = postgres_db
    db.execute(ITEMS)
    _insert(db, 1, 20)
    assert _stream(spark, db, first, tmp_path) == ['{"watermark": "10", "nullRows": 0}']
    _insert(db, 22, 30)  # from seq 11 on (seq 10 again would be below the watermark: lookback's case)
    assert _stream(spark, db, then, tmp_path) == ['{"watermark": "15", "nullRows": 0}']
    seqs = [r[0] for r in _rows(spark, tmp_path)]
    assert seqs == sorted(g // 2 for g in [*range(1, 21), *range(22, 31)])  # every row once
    assert read_offsets(tmp_path / "checkpoint" / "offsets" / "1") == [{"watermark": "15", "nullRows": 0}]


def test_batch_reads_and_skewed_ranges_agree(spark: SparkSession, postgres_db: PostgresDatabase) -> None:
    db = postgres_db
    db.execute(ITEMS)
    _insert(db, 1, 2000)
    db.execute("UPDATE items SET seq = seq + 1000000 WHERE seq % 10 = 0", "ANALYZE items")  # skewed values
    reads = {}
    for source in (SOURCE_NAME, PYTHON_SOURCE_NAME):
        df = (spark.read.format(source).options(**db.options).option("dbtable", "public.items")
              .option("watermarkColumn", "seq").option("startingWatermark", "100").option("numPartitions", "4")
              .load())
        reads[source] = sorted(tuple(r) for r in df.collect())
    assert reads[SOURCE_NAME] == reads[PYTHON_SOURCE_NAME]
    assert len(reads[SOURCE_NAME]) == sum(1 for g in range(1, 2001) if g // 2 > 100 or (g // 2) % 10 == 0)


def test_locally_the_jvm_twin_serves_the_name(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    lookup = jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource
    conf = spark._jsparkSession.sessionState().conf()
    assert lookup(SOURCE_NAME, conf).getName() == "medallion.sources.JdbcIncremental"


def test_with_the_framework_jar_the_python_source_is_not_offered_the_name(spark: SparkSession) -> None:
    # Spark would refuse it (DATA_SOURCE_ALREADY_EXISTS) only after listing every data source it has: about 1 s
    # of a cold session's start, so register_sources does not try
    from framework.sources import framework_jar_loaded, register_sources

    assert framework_jar_loaded(spark)
    register_sources(spark)
    test_locally_the_jvm_twin_serves_the_name(spark)

"""The sequence, CDC and snapshot example pipelines against PostgreSQL, data changing between updates; equal
watermarks at a batch boundary; an external JSON table read as a stream."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.spec import load_spec
from tests.integration.runner.pipeline_factory import make_pipeline
from tests.integration.sources.conftest import REPO, example_spec, rows, update

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.testing.postgres import PostgresDatabase

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("shop_secret")]


def test_sequence_loads_with_equal_values_at_batch_boundaries(spark: SparkSession, postgres_db: PostgresDatabase,
                                                              tmp_path: Path) -> None:
    db = postgres_db
    db.execute("CREATE TABLE events (seq bigint, kind text, payload jsonb)",
               # seq 3 four times: a batch of at most 3 rows ending at 3 takes all four (never splits a value)
               "INSERT INTO events VALUES (1, 'a', '{}'), (2, 'b', '{}'), (3, 'c1', '{}'), (3, 'c2', '{}'), "
               "(3, 'c3', '{}'), (3, 'c4', '{}'), (4, 'd', '{\"k\": [1]}'), (NULL, 'no-seq', NULL)")
    spec = example_spec("sequence", db, tmp_path / "storage", **{"shop.max_rows_per_batch": "3"})
    result = update(spec, spark)
    assert result.succeeded, result.error
    got = rows(spark, spec, "events_bronze", "seq,kind")
    assert [(r[0], r[1]) for r in got] == [(1, "a"), (2, "b"), (3, "c1"), (3, "c2"), (3, "c3"), (3, "c4"), (4, "d")]
    assert json.loads(got[-1][2]) == {"k": [1]}
    db.execute("INSERT INTO events VALUES (5, 'e', NULL), (6, 'f', NULL)")
    assert update(spec, spark).succeeded
    assert [r[0] for r in rows(spark, spec, "events_bronze", "seq,kind")] == [1, 2, 3, 3, 3, 3, 4, 5, 6]


def test_cdc_table_into_scd2_with_deletes(spark: SparkSession, postgres_db: PostgresDatabase, tmp_path: Path) -> None:
    db = postgres_db
    db.execute("CREATE TABLE users_cdc (seq bigint, op char(1), user_id int, name text, email text)",
               "INSERT INTO users_cdc VALUES (1, 'I', 1, 'ann', 'a@x'), (2, 'I', 2, 'bob', 'b@x'), "
               "(3, 'U', 1, 'ann', 'ann@x')")
    spec = example_spec("cdc", db, tmp_path / "storage")
    assert update(spec, spark).succeeded
    db.execute("INSERT INTO users_cdc VALUES (4, 'D', 2, NULL, NULL), (5, 'I', 3, 'cy', 'c@x')")
    result = update(spec, spark)
    assert result.succeeded, result.error
    history = rows(spark, spec, "users_history", "user_id,__START_AT")
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in history] == [
        (1, "ann", "a@x", 1, 3), (1, "ann", "ann@x", 3, None), (2, "bob", "b@x", 2, 4), (3, "cy", "c@x", 5, None)]


def test_snapshot_hash_diff_over_jdbc(spark: SparkSession, postgres_db: PostgresDatabase, tmp_path: Path) -> None:
    db = postgres_db
    db.execute("CREATE TABLE products (product_id int PRIMARY KEY, name text, price numeric(8,2))",
               "INSERT INTO products VALUES (1, 'pen', 1.50), (2, 'ink', 4.00), (3, 'pad', 2.25)")
    spec = example_spec("snapshot", db, tmp_path / "storage")
    assert update(spec, spark).succeeded
    db.execute("UPDATE products SET price = 4.50 WHERE product_id = 2", "DELETE FROM products WHERE product_id = 3",
               "INSERT INTO products VALUES (4, 'cap', 3.00)")
    result = update(spec, spark)
    assert result.succeeded, result.error
    assert [(r[0], r[1]) for r in rows(spark, spec, "products", "product_id")] == [(1, "pen"), (2, "ink"), (4, "cap")]
    table = str(spec.tables_dir / "products")
    last = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").agg({"version": "max"}).first()[0]
    feed = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", last)
            .load(table).where("_change_type != 'update_preimage'"))
    assert sorted((r.product_id, r._change_type) for r in feed.collect()) == [
        (2, "update_postimage"), (3, "delete"), (4, "insert")]


def test_external_json_table_read_as_a_stream(spark: SparkSession, tmp_path: Path) -> None:
    users = tmp_path / "data" / "users"
    users.mkdir(parents=True)
    (users / "1.json").write_text('{"id": 1, "name": "ann"}\n{"id": 2, "name": "bob"}\n')
    spec = make_pipeline(tmp_path, {"read.py": """
        import dlt

        @dlt.table
        def users_copy():
            return spark.readStream.table("cdc_data.users")
    """}, tables={"cdc_data.users": {"path": "data/users", "format": "json", "schema": "id bigint, name string"}})
    assert update(spec, spark).succeeded
    (users / "2.json").write_text('{"id": 3, "name": "cy"}\n')
    result = update(spec, spark)
    assert result.succeeded, result.error
    assert rows(spark, spec, "users_copy", "id") == [(1, "ann"), (2, "bob"), (3, "cy")]


def test_example_specs_load() -> None:
    for name in ("watermark", "sequence", "cdc", "snapshot"):
        assert load_spec(REPO / "conf" / f"db_{name}.yaml").name == f"db_{name}"


def test_sequence_example_loads_a_late_commit_once(spark: SparkSession, postgres_db: PostgresDatabase,
                                                   tmp_path: Path) -> None:
    # the case with the shipped settings (no lookback): A takes seq 2, B takes 3 and commits, an update
    # reads 3, then A commits: the next update loads 2, and nothing twice
    db = postgres_db
    db.execute("CREATE TABLE events (seq bigint GENERATED ALWAYS AS IDENTITY, kind text, payload jsonb)",
               "INSERT INTO events (kind) VALUES ('x')")
    spec = example_spec("sequence", db, tmp_path / "storage")
    a = db.connect()
    try:
        a.cursor().execute("INSERT INTO events (kind) VALUES ('a')")
        db.execute("INSERT INTO events (kind) VALUES ('b')")
        first = update(spec, spark)
        a.commit()
    finally:
        a.close()
    assert first.succeeded, first.error
    assert [(r[0], r[1]) for r in rows(spark, spec, "events_bronze", "seq")] == [(1, "x"), (3, "b")]
    second = update(spec, spark)
    assert second.succeeded, second.error
    assert [(r[0], r[1]) for r in rows(spark, spec, "events_bronze", "seq")] == [(1, "x"), (2, "a"), (3, "b")]


def test_sequence_example_with_a_lookback_keeps_each_event_once(spark: SparkSession, postgres_db: PostgresDatabase,
                                                                tmp_path: Path) -> None:
    db = postgres_db
    db.execute("CREATE TABLE events (seq bigint GENERATED ALWAYS AS IDENTITY, kind text, payload jsonb)",
               "INSERT INTO events (kind) SELECT 'k' || g FROM generate_series(1, 4) g")
    spec = example_spec("sequence", db, tmp_path / "storage", **{"shop.lookback": "2"})
    assert update(spec, spark).succeeded
    db.execute("INSERT INTO events (kind) VALUES ('k5')")
    result = update(spec, spark)
    assert result.succeeded, result.error
    assert [r[0] for r in rows(spark, spec, "events_bronze", "seq")] == [1, 2, 3, 3, 4, 4, 5]  # 3, 4: read again
    assert [(r[0], r[1]) for r in rows(spark, spec, "events", "seq")] == [(1, "k1"), (2, "k2"), (3, "k3"),
                                                                          (4, "k4"), (5, "k5")]

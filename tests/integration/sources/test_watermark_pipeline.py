"""The watermark-merge pattern (pipelines/db_watermark) against PostgreSQL, data changing between updates:
late rows within and beyond lookback, NULL watermarks, the change data feed, `medallion state`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.sources.state import pipeline_state
from tests.integration.sources.conftest import example_spec, rows, update

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.testing.postgres import PostgresDatabase

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("shop_secret")]

ORDERS = ("CREATE TABLE orders (order_id bigint PRIMARY KEY, customer text, amount numeric(10,2), "
          "status varchar(20), updated_at timestamptz)")


def _put(db: PostgresDatabase, *values: str) -> None:
    db.execute(*[f"INSERT INTO orders VALUES {v} ON CONFLICT (order_id) DO UPDATE SET customer = EXCLUDED.customer, "
                 "amount = EXCLUDED.amount, status = EXCLUDED.status, updated_at = EXCLUDED.updated_at"
                 for v in values])


def test_watermark_merge_across_updates(spark: SparkSession, postgres_db: PostgresDatabase, tmp_path: Path) -> None:
    db = postgres_db
    db.execute(ORDERS)
    _put(db, "(1, 'ann', 10.00, 'new', '2024-01-01 10:00:00+00')", "(2, 'bob', 20.50, 'new', '2024-01-01 10:05:00+00')",
         "(3, 'cy', 5.00, 'new', NULL)")
    spec = example_spec("watermark", db, tmp_path / "storage", **{"shop.lookback": "10 minutes"})
    first = update(spec, spark)
    assert first.succeeded, first.error
    assert rows(spark, spec, "orders", "order_id") == [
        (1, "ann", pytest.approx(10), "new", _ts("2024-01-01 10:00:00")),
        (2, "bob", pytest.approx(20.5), "new", _ts("2024-01-01 10:05:00"))]

    # an update; a row committed late within lookback (10:00 > 10:05 - 10 min); one late beyond it (09:00)
    _put(db, "(1, 'ann', 12.00, 'paid', '2024-01-01 11:00:00+00')", "(4, 'dee', 7.00, 'new', '2024-01-01 09:58:00+00')",
         "(5, 'eve', 1.00, 'new', '2024-01-01 09:00:00+00')")
    second = update(spec, spark)
    assert second.succeeded, second.error
    orders = rows(spark, spec, "orders", "order_id")
    assert [r[0] for r in orders] == [1, 2, 4]  # 5 is older than watermark - lookback: never read
    assert orders[0][2:4] == (pytest.approx(12), "paid")
    assert orders[2][1] == "dee"
    bronze = rows(spark, spec, "orders_bronze", "order_id,updated_at")
    assert [r[0] for r in bronze] == [1, 1, 2, 2, 4]  # 2 read again (within lookback), deduplicated by the merge

    # nothing new: no batch, nothing appended
    third = update(spec, spark)
    assert third.succeeded
    assert len(rows(spark, spec, "orders_bronze", "order_id")) == 5

    state = {s.table: s for s in pipeline_state(spec.checkpoints_dir)}["orders_bronze"]
    assert state.sources[0].offset == {"watermark": "2024-01-01 11:00:00+00", "nullRows": 1}
    assert state.pending_batch is None

    # the change data feed of the second update's merge: what it inserted and updated
    table = str(spec.tables_dir / "orders")
    history = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").where("operation = 'MERGE'").orderBy("version")
    second_merge = history.collect()[-1].version
    changes = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", second_merge)
               .option("endingVersion", second_merge).load(table).where("_change_type != 'update_preimage'"))
    assert sorted((r.order_id, r._change_type) for r in changes.collect()) == [(1, "update_postimage"),
                                                                                (4, "insert")]


def _ts(text: str) -> object:
    from datetime import datetime

    return datetime.fromisoformat(text)


def test_the_event_log_shows_each_update_s_watermarks_and_null_rows(spark: SparkSession, postgres_db: PostgresDatabase,
                                                                    tmp_path: Path) -> None:
    db = postgres_db
    db.execute(ORDERS)
    _put(db, "(1, 'ann', 10.00, 'new', '2024-01-01 10:00:00+00')", "(2, 'bob', 20.50, 'new', NULL)")
    spec = example_spec("watermark", db, tmp_path / "storage")
    first = update(spec, spark)
    _put(db, "(3, 'cy', 5.00, 'new', '2024-01-01 12:00:00+00')", "(4, 'dee', 7.00, 'new', NULL)")
    second = update(spec, spark)
    assert first.succeeded and second.succeeded, (first.error, second.error)
    assert second.flow("orders_bronze").sources[0]["end_offset"] == {"watermark": "2024-01-01 12:00:00+00",
                                                                       "nullRows": 2}
    log = spark.read.format("delta").load(str(spec.events_dir))
    offsets = []
    for result in (first, second):
        event = (log.where(f"origin.update_id = '{result.update_id}' AND event_type = 'flow_progress' "
                           "AND origin.flow_name = 'orders_bronze' AND details LIKE '%\"metrics\"%'").collect())
        assert len(event) == 1
        (source,) = json.loads(event[0].details)["flow_progress"]["sources"]
        offsets.append((source["num_input_rows"], source["start_offset"], source["end_offset"]))
    assert offsets == [  # Spark reports no start before a query's first batch; lookback (10 min) reads 1 again
        (1, None, {"watermark": "2024-01-01 10:00:00+00", "nullRows": 1}),
        (2, {"watermark": "2024-01-01 10:00:00+00", "nullRows": 1}, {"watermark": "2024-01-01 12:00:00+00",
                                                                     "nullRows": 2}),
    ]

"""Streaming semantics that continuous and file-arrival designs rely on (issue 20), each across restarts: every
update stops its queries and the next one resumes them from their checkpoints, state included.

- a windowed aggregation with a watermark into a streaming table: a window is appended once, when the watermark
  passes its end; a row later than the watermark is dropped;
- a stream-stream join whose two sides arrive in different updates (the join's state survives the restart);
- a stream-static join: each micro-batch joins with the static side as it is when the batch runs;
- a ``foreach_batch_sink`` that upserts (MERGE) into a Delta table: an update-style output.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from framework.runner.update import UpdateOptions, UpdateResult, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.spec import PipelineSpec

pytestmark = pytest.mark.spark


def _update(spec: PipelineSpec, spark: SparkSession) -> UpdateResult:
    result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert result.succeeded, result.error or [f.error for f in result.flows if f.error]
    return result


def _table(spark: SparkSession, spec: PipelineSpec, name: str, order: str) -> list[tuple[Any, ...]]:
    df = spark.read.format("delta").load(str(spec.tables_dir / name)).orderBy(*order.split(","))
    return [tuple(r) for r in df.collect()]


WINDOWS = """
import dlt
from pyspark.sql import functions as F

@dlt.table
def readings():
    return spark.readStream.format("json").schema("sensor STRING, ts TIMESTAMP, v DOUBLE").load(
        spark.conf.get("landing"))

@dlt.table
def per_minute():
    return (dlt.read_stream("readings").withWatermark("ts", "1 minute")
            .groupBy(F.window("ts", "1 minute"), "sensor")
            .agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("v"))
            .select(F.date_format("window.start", "HH:mm").alias("minute"), "sensor", "n", "v"))
"""


def _reading(sensor: str, ts: str, v: float) -> str:
    return f'{{"sensor": "{sensor}", "ts": "2024-05-01T{ts}Z", "v": {v}}}'


def test_windowed_aggregation_with_a_watermark_appends_closed_windows_once(spark: SparkSession,
                                                                           tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "1.json", [_reading("a", "10:00:10", 1), _reading("a", "10:00:40", 2),
                                         _reading("b", "10:01:05", 5)])
    spec = make_pipeline(tmp_path, {"p.py": WINDOWS}, {"landing": str(landing)})
    _update(spec, spark)
    assert _table(spark, spec, "per_minute", "minute,sensor") == []  # watermark 10:00:05: no window closed
    write_json_lines(landing, "2.json", [_reading("a", "10:00:50", 4), _reading("b", "10:02:30", 1)])
    _update(spec, spark)  # watermark 10:01:30: 10:00 closes, with the row that came in this update
    assert _table(spark, spec, "per_minute", "minute,sensor") == [("10:00", "a", 3, 7.0)]
    write_json_lines(landing, "3.json", [_reading("a", "10:00:55", 100),  # later than the watermark: dropped
                                         _reading("b", "10:01:50", 2), _reading("a", "10:04:00", 1)])
    result = _update(spec, spark)  # watermark 10:03:00: 10:01 and 10:02 close
    assert _table(spark, spec, "per_minute", "minute,sensor") == [
        ("10:00", "a", 3, 7.0), ("10:01", "b", 2, 7.0), ("10:02", "b", 1, 1.0)]
    assert result.flow("readings").num_output_rows == 3  # the late row was read, and dropped by the window


JOINS = """
import dlt
from pyspark.sql import functions as F

@dlt.table
def orders():
    return (spark.readStream.format("json").schema("order_id BIGINT, customer_id BIGINT, ordered_at TIMESTAMP")
            .load(spark.conf.get("orders")))

@dlt.table
def payments():
    return (spark.readStream.format("json").schema("order_id BIGINT, amount DOUBLE, paid_at TIMESTAMP")
            .load(spark.conf.get("payments")))

@dlt.table
def customers():
    return spark.read.format("json").schema("customer_id BIGINT, country STRING").load(spark.conf.get("customers"))

@dlt.table
def paid_orders():
    o = dlt.read_stream("orders").withWatermark("ordered_at", "1 hour").alias("o")
    p = dlt.read_stream("payments").withWatermark("paid_at", "1 hour").alias("p")
    return o.join(p, F.expr("o.order_id = p.order_id AND p.paid_at BETWEEN o.ordered_at AND "
                            "o.ordered_at + INTERVAL 1 HOUR")).select("o.order_id", "p.amount")

@dlt.table
def orders_with_country():
    return dlt.read_stream("orders").join(dlt.read("customers"), "customer_id", "left").select(
        "order_id", "country")
"""


def _order(order_id: int, customer: int, at: str) -> str:
    return f'{{"order_id": {order_id}, "customer_id": {customer}, "ordered_at": "2024-05-01T{at}Z"}}'


def _payment(order_id: int, amount: float, at: str) -> str:
    return f'{{"order_id": {order_id}, "amount": {amount}, "paid_at": "2024-05-01T{at}Z"}}'


def test_stream_stream_and_stream_static_joins_across_updates(spark: SparkSession, tmp_path: Path) -> None:
    orders, payments, customers = tmp_path / "orders", tmp_path / "payments", tmp_path / "customers"
    write_json_lines(orders, "1.json", [_order(1, 10, "09:00:00"), _order(2, 20, "09:10:00")])
    write_json_lines(payments, "1.json", [_payment(1, 5.0, "09:20:00")])
    write_json_lines(customers, "c.json", ['{"customer_id": 10, "country": "NL"}'])
    spec = make_pipeline(tmp_path, {"p.py": JOINS}, {"orders": str(orders), "payments": str(payments),
                                                     "customers": str(customers)})
    _update(spec, spark)
    assert _table(spark, spec, "paid_orders", "order_id") == [(1, 5.0)]
    assert _table(spark, spec, "orders_with_country", "order_id") == [(1, "NL"), (2, None)]
    # order 2's payment arrives one update later: the join finds order 2 in the state it kept; a payment two
    # hours after its order is outside the join's time range
    write_json_lines(payments, "2.json", [_payment(2, 7.5, "09:40:00")])
    write_json_lines(orders, "2.json", [_order(3, 20, "09:30:00")])
    write_json_lines(payments, "3.json", [_payment(3, 1.0, "11:45:00")])
    write_json_lines(customers, "d.json", ['{"customer_id": 20, "country": "FR"}'])
    _update(spec, spark)
    assert _table(spark, spec, "paid_orders", "order_id") == [(1, 5.0), (2, 7.5)]
    # the static side as it is when each batch runs: order 3 sees customer 20, order 2 (already written) not
    assert _table(spark, spec, "orders_with_country", "order_id") == [(1, "NL"), (2, None), (3, "FR")]


UPSERT_SINK = """
import dlt
from delta.tables import DeltaTable

TARGET = spark.conf.get("target")

@dlt.foreach_batch_sink(name="latest_balance")
def upsert(df, batch_id):
    latest = df.groupBy("account").agg({"seq": "max"}).withColumnRenamed("max(seq)", "seq").join(
        df, ["account", "seq"])
    if not DeltaTable.isDeltaTable(df.sparkSession, TARGET):
        latest.write.format("delta").save(TARGET)
        return
    (DeltaTable.forPath(df.sparkSession, TARGET).alias("t")
     .merge(latest.alias("s"), "t.account = s.account")
     .whenMatchedUpdateAll("s.seq > t.seq").whenNotMatchedInsertAll().execute())

@dlt.append_flow(target="latest_balance")
def balances():
    return spark.readStream.format("json").schema("account STRING, seq BIGINT, balance DOUBLE").load(
        spark.conf.get("landing"))
"""


def test_foreach_batch_sink_upserts_across_updates(spark: SparkSession, tmp_path: Path) -> None:
    landing, target = tmp_path / "landing", tmp_path / "balances"
    write_json_lines(landing, "1.json", ['{"account": "a", "seq": 1, "balance": 10}',
                                         '{"account": "a", "seq": 2, "balance": 12}',
                                         '{"account": "b", "seq": 1, "balance": 3}'])
    spec = make_pipeline(tmp_path, {"p.py": UPSERT_SINK}, {"landing": str(landing), "target": str(target)})
    _update(spec, spark)
    write_json_lines(landing, "2.json", ['{"account": "b", "seq": 2, "balance": 4}',
                                         '{"account": "a", "seq": 1, "balance": 99}',  # older than the kept row
                                         '{"account": "c", "seq": 1, "balance": 1}'])
    result = _update(spec, spark)
    assert result.flow("balances").num_input_rows == 3  # only the new file: the checkpoint carried on
    rows = spark.read.format("delta").load(str(target)).orderBy("account").collect()
    assert [(r.account, r.seq, r.balance) for r in rows] == [("a", 2, 12.0), ("b", 2, 4.0), ("c", 1, 1.0)]

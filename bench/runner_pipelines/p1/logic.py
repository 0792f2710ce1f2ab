"""The DataFrame logic of the P1 pipeline, shared with the hand-written baseline (bench/bench_runner.py)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

ORDER_SCHEMA = ("order_id BIGINT, ts TIMESTAMP, customer_id BIGINT, amount DOUBLE, qty INT, status STRING, "
                "country STRING, note STRING")
DROP_RULES = {"positive_amount": "amount > 0", "valid_status": "status IS NOT NULL"}
WARN_RULES = {"known_country": "country IN ('DE', 'FR', 'US', 'JP', 'BR')"}


def to_silver(bronze: DataFrame) -> DataFrame:
    return bronze.select("order_id", "ts", "customer_id", "amount", "qty", "status", "country",
                         F.to_date("ts").alias("order_date"), (F.col("amount") * F.col("qty")).alias("total"))


def to_gold(silver: DataFrame) -> DataFrame:
    return (silver.groupBy("order_date", "country")
            .agg(F.count(F.lit(1)).alias("orders"), F.round(F.sum("total"), 2).alias("revenue"),
                 F.avg("qty").alias("avg_qty")))

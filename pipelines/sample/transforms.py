"""Plain DataFrame logic for the sample pipeline (no declarations here: easy to unit test)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def typed_orders(raw: DataFrame) -> DataFrame:
    """Bronze orders (inferred types + _rescued_data) → silver columns."""
    return raw.select(
        F.col("order_id").cast("bigint").alias("order_id"),
        F.col("customer_id").cast("bigint").alias("customer_id"),
        F.col("amount").cast("double").alias("amount"),
        F.upper(F.col("currency")).alias("currency"),
        F.to_timestamp("order_ts").alias("order_ts"),
        F.lower(F.col("status")).alias("status"),
        F.col("_rescued_data"),
    )


def daily_revenue(orders: DataFrame, customers: DataFrame) -> DataFrame:
    """Completed revenue per day and country, joined with the current customer version."""
    current = customers.where(F.col("__END_AT").isNull()).select("customer_id", "country")
    return (
        orders.where(F.col("status") == "completed")
        .join(current, "customer_id", "left")
        .groupBy(F.to_date("order_ts").alias("order_date"), F.coalesce("country", F.lit("unknown")).alias("country"))
        .agg(F.count("*").alias("orders"), F.round(F.sum("amount"), 2).alias("revenue"))
    )

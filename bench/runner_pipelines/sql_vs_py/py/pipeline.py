# ruff: noqa: F821  (`spark` is provided by the pipeline loader, as on Databricks)
# The bench_sql pipeline written with the Python API; ../sql/pipeline.sql is the same pipeline in DLT SQL.
import dlt
from pyspark.sql import functions as F

ORDER_SCHEMA = ("order_id BIGINT, ts TIMESTAMP, customer_id BIGINT, amount DOUBLE, qty INT, status STRING, "
                "country STRING, note STRING")


@dlt.table(comment="Orders as landed (JSON), through Auto Loader")
def orders_bronze():
    return (spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")
            .option("cloudFiles.inferColumnTypes", "true").schema(ORDER_SCHEMA)
            .load(spark.conf.get("bench.landing")))


@dlt.table(comment="Valid orders")
@dlt.expect_all_or_drop({"positive_amount": "amount > 0", "has_status": "status IS NOT NULL"})
@dlt.expect("known_country", "country IN ('DE', 'FR', 'US', 'JP', 'BR')")
def orders_silver():
    return dlt.read_stream("orders_bronze").select(
        "order_id", "ts", "customer_id", "amount", "qty", "status", "country",
        F.to_date("ts").alias("order_date"), (F.col("amount") * F.col("qty")).alias("total"))


@dlt.table(comment="Revenue per day and country")
def revenue_by_day_country():
    return (dlt.read("orders_silver").groupBy("order_date", "country")
            .agg(F.count(F.lit(1)).alias("orders"), F.round(F.sum("total"), 2).alias("revenue"),
                 F.avg("qty").alias("avg_qty")))

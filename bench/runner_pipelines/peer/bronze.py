# ruff: noqa: F821  (`spark` is provided by the pipeline loader, as on Databricks)
# Peer pipeline: the P1 pipeline written for open-source Spark Declarative Pipelines (no expectations
# there, so silver filters rows with the same conditions). The same file runs on the framework and on
# `spark-pipelines run`.
from pyspark import pipelines as dp
from pyspark.sql import functions as F

ORDER_SCHEMA = ("order_id BIGINT, ts TIMESTAMP, customer_id BIGINT, amount DOUBLE, qty INT, status STRING, "
                "country STRING, note STRING")


@dp.table(comment="Orders as landed (JSON)")
def orders_bronze():
    return spark.readStream.format("json").schema(ORDER_SCHEMA).load(spark.conf.get("bench.landing"))


@dp.table(comment="Valid orders")
def orders_silver():
    return (spark.readStream.table("orders_bronze")
            .where("amount > 0 AND status IS NOT NULL")
            .select("order_id", "ts", "customer_id", "amount", "qty", "status", "country",
                    F.to_date("ts").alias("order_date"), (F.col("amount") * F.col("qty")).alias("total")))


@dp.materialized_view(comment="Revenue per day and country")
def revenue_by_day_country():
    return (spark.read.table("orders_silver").groupBy("order_date", "country")
            .agg(F.count(F.lit(1)).alias("orders"), F.round(F.sum("total"), 2).alias("revenue"),
                 F.avg("qty").alias("avg_qty")))

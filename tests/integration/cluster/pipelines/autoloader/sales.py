# ruff: noqa: F821
# Auto Loader over CSV (inferred types, a schema hint, rescued data) and JSON, then a materialized view that
# converts amounts with a pandas UDF of this folder's helper module.
import dlt
from pyspark.sql import functions as F
from rates import to_eur

LANDING = spark.conf.get("cluster.landing")


@dlt.table
def sales_raw():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "csv")
        .option("header", "true")
        .option("cloudFiles.inferColumnTypes", "true")
        .option("cloudFiles.schemaHints", "sale_id bigint, amount double")
        .load(f"{LANDING}/sales")
        .withColumn("file", F.col("_metadata.file_name"))
    )


@dlt.table
def stores_raw():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.schemaHints", "store_id bigint")
        .load(f"{LANDING}/stores")
    )


@dlt.table
def sales_by_region():
    sales = dlt.read("sales_raw").withColumn("amount_eur", to_eur(F.col("amount"), F.col("currency")))
    return (
        sales.join(dlt.read("stores_raw"), "store_id", "left")
        .groupBy(F.coalesce("region", F.lit("unknown")).alias("region"))
        .agg(F.count("*").alias("sales"), F.round(F.sum("amount_eur"), 2).alias("amount_eur"))
    )

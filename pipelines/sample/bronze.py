# Bronze: raw files landed by upstream systems, ingested incrementally with Auto Loader.
# Runs unchanged on Databricks; locally `medallion run conf/sample.yaml` maps dbfs:/ paths to local folders.
import dlt
from pyspark.sql import functions as F

LANDING = spark.conf.get("sample.landing")


@dlt.table(comment="Orders as landed (JSON), with values that did not fit the schema in _rescued_data",
           table_properties={"quality": "bronze"})
def orders_raw():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.inferColumnTypes", "true")
        .option("cloudFiles.schemaHints", "order_id bigint, customer_id bigint, amount double")
        .load(f"{LANDING}/orders")
        .withColumn("_ingested_at", F.current_timestamp())
        .withColumn("_source_file", F.col("_metadata.file_path"))
    )


@dlt.view(comment="Bronze rows with rescued values: the quarantine to look at when sources drift")
def orders_rescued():
    return dlt.read("orders_raw").where("_rescued_data IS NOT NULL")


@dlt.table(comment="Customer change feed (CDC) as landed", table_properties={"quality": "bronze"})
def customers_cdc_raw():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.inferColumnTypes", "true")
        .load(f"{LANDING}/customers")
    )

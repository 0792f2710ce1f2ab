# Timestamp watermark → bronze append → APPLY CHANGES SCD 1: the "watermark MERGE" pattern.
# Each update reads the orders changed since the last watermark (updated_at > watermark - lookback), appends them
# to bronze, and merges them into one row per order. A transaction that commits after a later updated_at was read
# is read when it ends (the source tracks the transactions in flight), with no lookback; `lookback` is for
# updated_at values set before the write (a client's clock, now() in a transaction that reads first), and the
# rows of its window read again are absorbed by APPLY CHANGES keyed on order_id: the exactly-once table.
import dlt
from pyspark.sql.functions import col

URL = spark.conf.get("shop.jdbc_url")
USER = spark.conf.get("shop.user")
LOOKBACK = spark.conf.get("shop.lookback", "0")


@dlt.table(comment="Orders as read from the shop database, one row per change seen")
def orders_bronze():
    return (spark.readStream.format("jdbc_incremental")
            .option("url", URL)
            .option("dbtable", "public.orders")
            .option("user", USER)
            .option("password", dbutils.secrets.get("shop", "password"))
            .option("watermarkColumn", "updated_at")
            .option("lookback", LOOKBACK)
            .load())


dlt.create_streaming_table("orders", comment="One row per order, latest change wins (SCD 1)",
                           table_properties={"delta.enableChangeDataFeed": "true"})

dlt.apply_changes(target="orders", source="orders_bronze", keys=["order_id"], sequence_by=col("updated_at"),
                  stored_as_scd_type=1)

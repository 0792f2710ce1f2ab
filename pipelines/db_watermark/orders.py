# Timestamp watermark → bronze append → APPLY CHANGES SCD 1: the "watermark MERGE" pattern.
# Each update reads the orders changed since the last watermark (updated_at > watermark - lookback), appends them
# to bronze, and merges them into one row per order. Rows committed late with an older updated_at are read again
# if they fall within `lookback`; the duplicates lookback brings are absorbed by APPLY CHANGES.
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

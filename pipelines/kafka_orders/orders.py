# Kafka → bronze → silver → APPLY CHANGES: order events (JSON values) from a Kafka topic.
# Bronze keeps every record with its Kafka coordinates and the JSON parsed; a value that does not parse (not
# JSON, a field of the wrong type) keeps its text in _corrupt_record: never dropped. Silver takes the valid
# records, orders_quarantine the others (silver + quarantine = bronze); orders holds each order's latest state,
# and order_status_out publishes every valid event to another topic (a Kafka sink).
# Runs unchanged on Databricks, where the broker is yours (orders.kafka_servers in the pipeline configuration).
import dlt
from pyspark.sql import functions as F

SERVERS = spark.conf.get("orders.kafka_servers")
SCHEMA = "order_id BIGINT, status STRING, amount DOUBLE, updated_at TIMESTAMP, _corrupt_record STRING"
VALID = {"value_is_json": "_corrupt_record IS NULL", "has_order_id": "order_id IS NOT NULL"}
KAFKA_COLUMNS = ["kafka_key", "topic", "partition", "offset", "kafka_timestamp", "_corrupt_record"]


@dlt.table(comment="Order events as read from Kafka, the JSON value parsed", table_properties={"quality": "bronze"})
@dlt.expect("value_is_json", "_corrupt_record IS NULL")
def orders_bronze():
    events = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", SERVERS)
        .option("subscribe", spark.conf.get("orders.topic"))
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", spark.conf.get("orders.max_offsets_per_trigger", "100000"))
        .load()
    )
    return events.select(
        F.col("key").cast("string").alias("kafka_key"),
        F.from_json(F.col("value").cast("string"), SCHEMA,
                    {"columnNameOfCorruptRecord": "_corrupt_record"}).alias("event"),
        "topic", "partition", "offset", F.col("timestamp").alias("kafka_timestamp"),
    ).select("kafka_key", "event.*", "topic", "partition", "offset", "kafka_timestamp")


@dlt.table(comment="Valid order events", table_properties={"quality": "silver"})
@dlt.expect_all_or_drop(VALID)
def orders_silver():
    return dlt.read_stream("orders_bronze")


@dlt.table(comment="Order events that failed silver's rules, kept as they came")
def orders_quarantine():
    return dlt.read_stream("orders_bronze").where("_corrupt_record IS NOT NULL OR order_id IS NULL")


dlt.create_streaming_table("orders", comment="Each order's latest state (SCD type 1)")

dlt.apply_changes(target="orders", source="orders_silver", keys=["order_id"], sequence_by=F.col("updated_at"),
                  except_column_list=KAFKA_COLUMNS, stored_as_scd_type=1)

dlt.create_sink("order_status_out", format="kafka",
                options={"kafka.bootstrap.servers": SERVERS, "topic": spark.conf.get("orders.out_topic")})


@dlt.append_flow(target="order_status_out")
def publish_status():
    return dlt.read_stream("orders_silver").select(
        F.col("order_id").cast("string").alias("key"),
        F.to_json(F.struct("order_id", "status", "updated_at")).alias("value"))

# File-event-driven loading: land -> stage -> MERGE -> archive.
#
# Upstream systems land JSON change files (one row per change to a customer) in a landing folder. Each update,
# started when files arrive (a Databricks job's file-arrival trigger; `medallion watch` locally):
#   1. stages the new files into the bronze streaming table `customers_staged` with Auto Loader: each file is
#      read exactly once (tracked in the flow's checkpoint), with the file it came from;
#   2. archives them: once their batch is committed, Auto Loader moves them from the landing folder to the
#      archive folder (cloudFiles.cleanSource MOVE), so the landing folder holds only what is still to load;
#   3. merges the staged changes into `customers` by key (APPLY CHANGES, SCD type 1): the latest change per
#      customer wins, a DELETE removes the row, and a change older than what the target holds is ignored, so a
#      file landed twice or late does no harm.
import dlt
from pyspark.sql import functions as F

LANDING = spark.conf.get("file_arrival.landing")
ARCHIVE = spark.conf.get("file_arrival.archive")
ARCHIVE_AFTER = spark.conf.get("file_arrival.archive_after", "30 days")

CHANGE_SCHEMA = "customer_id bigint, name string, email string, op string, changed_at timestamp"


@dlt.table(comment="Change files as landed, one row per change, with the file it came from",
           table_properties={"quality": "bronze"})
def customers_staged():
    return (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", "json")
        .option("cloudFiles.cleanSource", "MOVE")
        .option("cloudFiles.cleanSource.moveDestination", ARCHIVE)
        .option("cloudFiles.cleanSource.retentionDuration", ARCHIVE_AFTER)
        .schema(CHANGE_SCHEMA)
        .load(LANDING)
        .withColumn("_source_file", F.col("_metadata.file_path"))
        .withColumn("_staged_at", F.current_timestamp())
    )


dlt.create_streaming_table("customers", comment="Customers, current state (SCD type 1)",
                           table_properties={"quality": "silver"})

dlt.apply_changes(
    target="customers",
    source="customers_staged",
    keys=["customer_id"],
    sequence_by=F.col("changed_at"),
    apply_as_deletes=F.expr("op = 'DELETE'"),
    except_column_list=["op", "_source_file", "_staged_at"],
    stored_as_scd_type=1,
)

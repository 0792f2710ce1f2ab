# Sequence-number loads: an append-only table whose `seq` grows (an identity column, a log sequence number).
# Each update appends the rows above the high-water mark; the mark is the flow's checkpoint, so a rerun, a
# restart or a kill -9 never loads a row twice or skips one. A transaction that took a lower `seq` and commits
# after a higher one was read is not skipped either: the source tracks the transactions in flight at each read
# and reads their rows when they end (docs/database-sources.md), so no lookback is needed for it.
import dlt
from pyspark.sql.functions import col

LOOKBACK = spark.conf.get("shop.lookback", "0")


@dlt.table(comment="Audit events, appended in sequence order")
def events_bronze():
    return (spark.readStream.format("jdbc_incremental")
            .option("url", spark.conf.get("shop.jdbc_url"))
            .option("dbtable", "public.events")
            .option("user", spark.conf.get("shop.user"))
            .option("password", dbutils.secrets.get("shop", "password"))
            .option("watermarkColumn", "seq")
            .option("lookback", LOOKBACK)
            .option("maxRowsPerBatch", spark.conf.get("shop.max_rows_per_batch", "100000"))
            .load())


if LOOKBACK != "0":
    # A lookback (for ids an application fetched before inserting) reads the rows of its window again, so
    # events_bronze holds them twice; keyed on the identity column, this table holds each event once.
    dlt.create_streaming_table("events", comment="Each audit event once, however often it was read")
    dlt.apply_changes(target="events", source="events_bronze", keys=["seq"], sequence_by=col("seq"),
                      stored_as_scd_type=1)

# Sequence-number loads: an append-only table whose `seq` grows (an identity column, a log sequence number).
# Each update appends the rows above the high-water mark; the mark is the flow's checkpoint, so a rerun, a
# restart or a kill -9 never loads a row twice or skips one.
import dlt


@dlt.table(comment="Audit events, appended in sequence order")
def events_bronze():
    return (spark.readStream.format("jdbc_incremental")
            .option("url", spark.conf.get("shop.jdbc_url"))
            .option("dbtable", "public.events")
            .option("user", spark.conf.get("shop.user"))
            .option("password", dbutils.secrets.get("shop", "password"))
            .option("watermarkColumn", "seq")
            .option("maxRowsPerBatch", spark.conf.get("shop.max_rows_per_batch", "100000"))
            .load())

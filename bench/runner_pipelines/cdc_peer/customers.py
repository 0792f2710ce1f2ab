# ruff: noqa: F821  (`spark` is provided by the pipeline loader, as on Databricks)
# CDC peer pipeline: APPLY CHANGES (SCD 1) over the bench_cdc change events, written for open-source Spark
# Declarative Pipelines. The same file runs on the framework and on `spark-pipelines run`.
#
# `bench.cdc_peer.target` (pipeline configuration) selects how `customers_scd1` is built:
# - `auto_cdc` (default): a streaming table fed by `dp.create_auto_cdc_flow` from a streaming view of the files;
# - `mv`: a materialized view with the same contents for an update from empty storage (latest event per key by
#   `seq`, keys whose latest event is a delete left out, `op` and `batch` dropped). Only bench_cdc_peer's peer
#   side uses it, because open-source SDP 4.2 refuses Delta as an AutoCDC target (see bench/README.md).
from pyspark import pipelines as dp
from pyspark.sql import functions as F

# The bench_cdc events, read from the partitioned Parquet folder (`batch` is the partition column).
EVENT_SCHEMA = "key BIGINT, seq BIGINT, op STRING, name STRING, city STRING, amount DOUBLE, batch INT"
VALUE_COLUMNS = [field.split()[0] for field in EVENT_SCHEMA.split(",")][1:]  # all but the key
DELETE_WHEN = "op = 'D'"
EXCEPT_COLUMNS = ["op", "batch"]

if spark.conf.get("bench.cdc_peer.target", "auto_cdc") == "mv":

    @dp.materialized_view(name="customers_scd1", comment="Latest version of each key (SCD 1), recomputed")
    def customers_scd1_mv():
        events = spark.read.format("parquet").schema(EVENT_SCHEMA).load(spark.conf.get("bench.landing"))
        latest = (events.groupBy("key").agg(F.max_by(F.struct(*VALUE_COLUMNS), "seq").alias("e"))
                  .select("key", "e.*"))
        return latest.where(~F.coalesce(F.expr(DELETE_WHEN), F.lit(False))).drop(*EXCEPT_COLUMNS)

else:

    @dp.temporary_view(comment="CDC events as landed (Parquet)")
    def customer_events():
        return spark.readStream.format("parquet").schema(EVENT_SCHEMA).load(spark.conf.get("bench.landing"))

    dp.create_streaming_table("customers_scd1", comment="Latest version of each key (SCD 1)")

    dp.create_auto_cdc_flow(
        target="customers_scd1",
        source="customer_events",
        keys=["key"],
        sequence_by="seq",
        apply_as_deletes=DELETE_WHEN,
        except_column_list=EXCEPT_COLUMNS,
        stored_as_scd_type=1,
    )

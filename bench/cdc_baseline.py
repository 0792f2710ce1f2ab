"""Hand-written baselines for the CDC benchmark: dedup per key (max_by over the sequence) + one Delta MERGE.

They are what a data engineer writes without the framework to get the same table from out-of-order CDC events
with deletes: the sequence is kept in the SCD 1 target to compare against, deletes are remembered in a side table
so that late events do not resurrect keys, and SCD 2 rebuilds the timeline of the keys a batch touches.
They share no code with ``framework.cdc``.
"""

from __future__ import annotations

import os

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

VALUES = ["name", "city", "amount"]


def _exists(path: str) -> bool:
    return os.path.isdir(os.path.join(path, "_delta_log"))


def _create(df: DataFrame, path: str) -> None:
    (df.limit(0).write.format("delta").option("delta.enableDeletionVectors", "true").mode("append").save(path))


def scd1_batch(spark: SparkSession, src: DataFrame, target: str, tombstones: str) -> None:
    """Apply one batch to an SCD 1 target (columns key, name, city, amount, seq)."""
    latest = (src.groupBy("key")
              .agg(F.max_by(F.struct("seq", "op", *VALUES), "seq").alias("e"))
              .select("key", "e.*")).localCheckpoint()
    if _exists(tombstones):
        deleted = spark.read.format("delta").load(tombstones).groupBy("key").agg(F.max("seq").alias("del_seq"))
        latest = (latest.join(deleted, "key", "left")
                  .filter(F.col("del_seq").isNull() | (F.col("seq") > F.col("del_seq"))).drop("del_seq"))
    if not _exists(target):
        _create(latest.select("key", *VALUES, "seq"), target)
    (DeltaTable.forPath(spark, target).alias("t").merge(latest.alias("s"), "t.key = s.key")
     .whenMatchedDelete("s.op = 'D' AND s.seq > t.seq")
     .whenMatchedUpdate("s.op <> 'D' AND s.seq > t.seq", set={c: f"s.{c}" for c in [*VALUES, "seq"]})
     .whenNotMatchedInsert("s.op <> 'D'", values={c: f"s.{c}" for c in ["key", *VALUES, "seq"]})
     .execute())
    latest.filter("op = 'D'").select("key", "seq").write.format("delta").mode("append").save(tombstones)


def scd2_batch(spark: SparkSession, src: DataFrame, target: str, tombstones: str) -> None:
    """Apply one batch to an SCD 2 target (columns key, name, city, amount, __START_AT, __END_AT)."""
    events = src.select("key", "seq", "op", *VALUES).localCheckpoint()
    if not _exists(target):
        _create(events.select("key", *VALUES, F.col("seq").alias("__START_AT"), F.col("seq").alias("__END_AT")),
                target)
    keys = events.select("key").distinct()
    existing = spark.read.format("delta").load(target).join(keys, "key", "left_semi")
    history = existing.select("key", F.col("__START_AT").alias("seq"), F.lit("U").alias("op"), *VALUES)
    if _exists(tombstones):
        deletes = (spark.read.format("delta").load(tombstones).join(keys, "key", "left_semi")
                   .select("key", "seq", F.lit("D").alias("op"), *[F.lit(None).cast(t).alias(c) for c, t in
                                                                  [("name", "string"), ("city", "string"),
                                                                   ("amount", "double")]]))
        history = history.unionByName(deletes)
    fresh = events.join(history.select("key", "seq"), ["key", "seq"], "left_anti")
    timeline = history.unionByName(fresh)
    versions = (timeline.withColumn("__END_AT", F.lead("seq").over(Window.partitionBy("key").orderBy("seq")))
                .filter("op = 'U'").select("key", *VALUES, F.col("seq").alias("__START_AT"), "__END_AT"))
    (DeltaTable.forPath(spark, target).alias("t")
     .merge(versions.alias("s"), "t.key = s.key AND t.__START_AT = s.__START_AT")
     .whenMatchedUpdate("NOT (t.__END_AT <=> s.__END_AT)", set={"__END_AT": "s.__END_AT"})
     .whenNotMatchedInsertAll().execute())
    fresh.filter("op = 'D'").select("key", "seq").write.format("delta").mode("append").save(tombstones)

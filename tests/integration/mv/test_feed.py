"""ROW_BASED after updates and deletes, from the inputs' change data feed (issue 37, feed.py): a join view, a
self-join and a filter/projection over an input that records its change data feed stay equal to their full recompute after appends,
deletes and updates, refreshed by ROW_BASED (not recomputed); the same view over an input without the feed is
recomputed after a delete, with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.mv.kit import Kit, chosen, rows

pytestmark = pytest.mark.spark

VIEWS = """
import dlt
from pyspark import pipelines as dp
from pyspark.sql import functions as F

@dlt.table(table_properties={"delta.enableChangeDataFeed": "true"})
def fed():
    return spark.readStream.format("json").schema("id bigint, k string, v bigint").load(spark.conf.get("landing"))

@dlt.table
def dim():
    return spark.readStream.format("json").schema("id bigint, k string, v bigint").load(spark.conf.get("landing")) \\
        .where("v % 2 = 0").select("k", F.col("id").alias("did"))

@dp.materialized_view(refresh_policy="incremental")
def joined():
    return spark.read.table("fed").join(spark.read.table("dim"), "k").select("id", "k", "did", "v")

@dp.materialized_view(refresh_policy="incremental")
def pairs():
    a = spark.read.table("fed")
    b = spark.read.table("fed").select(F.col("k").alias("k2"), F.col("id").alias("id2"), F.col("v").alias("v2"))
    return a.join(b, (a.k == b.k2) & (a.id < b.id2)).select("id", "id2", "k", "v", "v2")

@dp.materialized_view(refresh_policy="incremental")
def kept():
    return spark.read.table("fed").where("v > 2").select("id", "k", (F.col("v") * 10).alias("v10"))

@dp.materialized_view(refresh_policy="incremental")
def plain_joined():
    return spark.read.table("src").join(spark.read.table("dim"), "k").select("id", "k", "did", "v")
"""

QUERIES = {
    "joined": "SELECT f.id, f.k, d.did, f.v FROM delta.`{fed}` f JOIN delta.`{dim}` d ON f.k = d.k",
    "pairs": "SELECT a.id, b.id AS id2, a.k, a.v, b.v AS v2 FROM delta.`{fed}` a JOIN delta.`{fed}` b "
             "ON a.k = b.k AND a.id < b.id",
    "kept": "SELECT id, k, v * 10 AS v10 FROM delta.`{fed}` WHERE v > 2",
    "plain_joined": "SELECT f.id, f.k, d.did, f.v FROM delta.`{src}` f JOIN delta.`{dim}` d ON f.k = d.k",
}


def _check(spark, kit: Kit, when: str) -> None:
    paths = {name: kit.table(name) for name in ("fed", "dim", "src")}
    for view, query in QUERIES.items():
        assert rows(spark, kit.table(view)) == rows(spark, spark.sql(query.format(**paths))), f"{view} {when}"


def test_joins_follow_deletes_and_updates_from_the_feed(spark, tmp_path: Path) -> None:
    kit = Kit(tmp_path, VIEWS)
    kit.land([{"id": i, "k": "abc"[i % 3], "v": i} for i in range(8)] + [{"id": 20, "k": None, "v": 2}])
    assert kit.run().succeeded
    _check(spark, kit, "initial")
    steps = [("append", None), ("DELETE FROM delta.`{fed}` WHERE id IN (1, 4)", "delete"),
             ("UPDATE delta.`{fed}` SET v = v + 10, k = 'c' WHERE id = 2", "update"),
             ("DELETE FROM delta.`{fed}` WHERE id = 30", "delete and append")]
    for n, (sql, kind) in enumerate(steps):
        if sql == "append" or kind == "delete and append":
            kit.land([{"id": 30 + n, "k": "a", "v": 6}, {"id": 40 + n, "k": "b", "v": 3}])
        if sql != "append":
            spark.sql(sql.format(fed=kit.table("fed")))
        assert kit.run().succeeded
        _check(spark, kit, f"after {kind or 'append'}")
        assert chosen(kit.planning(spark, "joined")[-1]) == "ROW_BASED", kind
        assert chosen(kit.planning(spark, "pairs")[-1]) == "ROW_BASED", kind
        assert chosen(kit.planning(spark, "kept")[-1]) == ("APPEND_ONLY" if n == 0 else "ROW_BASED"), kind
    spark.sql(f"DELETE FROM delta.`{kit.table('src')}` WHERE id = 3")
    assert kit.run().succeeded
    _check(spark, kit, "after a delete without the feed")
    last = kit.planning(spark, "plain_joined")[-1]
    assert chosen(last) == "COMPLETE_RECOMPUTE"
    row_based = next(t for t in last["technique_information"] if t["maintenance_type"].endswith("ROW_BASED"))
    assert "CHANGES_NOT_APPEND_ONLY" in {i["issue_type"] for i in row_based["incrementalization_issues"]}

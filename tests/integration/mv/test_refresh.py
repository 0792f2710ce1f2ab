"""Incremental refresh of materialized views end to end (issue 37): the technique per shape, the view equal to
its full recompute after appends, updates, deletes and empty updates, STRICT and FULL."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.mv.kit import Kit, chosen, rows

pytestmark = pytest.mark.spark

VIEWS = """
import dlt
from pyspark import pipelines as dp
from pyspark.sql import functions as F

@dp.materialized_view(refresh_policy="incremental")
def big():
    return spark.read.table("src").where("v > 2").select("id", "k", (F.col("v") * 10).alias("v10"))

@dp.materialized_view(refresh_policy="incremental")
def per_k():
    return spark.read.table("src").groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("s"),
                                                    F.min("v").alias("lo"), F.max("v").alias("hi"))
"""

BIG = "SELECT id, k, v * 10 AS v10 FROM delta.`{src}` WHERE v > 2"
PER_K = "SELECT k, count(*) AS n, sum(v) AS s, min(v) AS lo, max(v) AS hi FROM delta.`{src}` GROUP BY k"


def _check(spark, kit: Kit) -> None:
    src = kit.table("src")
    assert rows(spark, kit.table("big")) == rows(spark, spark.sql(BIG.format(src=src)))
    assert rows(spark, kit.table("per_k")) == rows(spark, spark.sql(PER_K.format(src=src)))


def test_appends_then_delete_then_nothing(spark, tmp_path: Path) -> None:
    kit = Kit(tmp_path, VIEWS)
    kit.land([{"id": 1, "k": "a", "v": 3}, {"id": 2, "k": "b", "v": 1}, {"id": 3, "k": None, "v": None}])
    assert kit.run().succeeded
    _check(spark, kit)
    assert [chosen(p) for p in kit.planning(spark, "big")] == ["COMPLETE_RECOMPUTE"]
    kit.land([{"id": 4, "k": "a", "v": 7}, {"id": 5, "k": "c", "v": 5}, {"id": 6, "k": None, "v": 2}])
    assert kit.run().succeeded
    _check(spark, kit)
    assert chosen(kit.planning(spark, "big")[-1]) == "APPEND_ONLY"
    assert chosen(kit.planning(spark, "per_k")[-1]) == "GROUP_AGGREGATE"
    assert kit.run().succeeded  # nothing new
    _check(spark, kit)
    assert chosen(kit.planning(spark, "per_k")[-1]) == "NO_OP"
    spark.sql(f"DELETE FROM delta.`{kit.table('src')}` WHERE id = 4")
    assert kit.run().succeeded
    _check(spark, kit)
    last = kit.planning(spark, "per_k")[-1]
    assert chosen(last) == "COMPLETE_RECOMPUTE"
    issues = {i["issue_type"] for t in last["technique_information"] for i in t.get("incrementalization_issues", [])}
    assert "CHANGES_NOT_APPEND_ONLY" in issues
    kit.land([{"id": 7, "k": "b", "v": 9}])
    assert kit.run().succeeded
    _check(spark, kit)
    assert chosen(kit.planning(spark, "per_k")[-1]) == "GROUP_AGGREGATE"

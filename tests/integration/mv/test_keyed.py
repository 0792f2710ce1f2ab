"""The keyed recomputes end to end (issue 37): WINDOW_FUNCTION recomputes the window partitions the input's
changes touched, PARTITION_OVERWRITE the view partitions whose input partitions changed, after appends, deletes
and updates; each view equals its full recompute, and only the touched keys' rows are rewritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.incremental.analysis import PARTITION_OVERWRITE, WINDOW_FUNCTION
from tests.integration.mv.kit import Kit, chosen, rows

pytestmark = pytest.mark.spark

VIEWS = """
import dlt
from pyspark import pipelines as dp
from pyspark.sql import Window
from pyspark.sql import functions as F

@dlt.table(partition_cols=["k"])
def psrc():
    return spark.readStream.format("json").schema("id bigint, k string, v bigint").load(spark.conf.get("landing"))

@dp.materialized_view(refresh_policy="incremental")
def ranked():
    w = Window.partitionBy("k").orderBy(F.col("v").desc_nulls_last(), "id")
    return spark.read.table("src").where("id > 0").select("k", "id", "v", F.row_number().over(w).alias("r"),
                                                          F.sum("v").over(Window.partitionBy("k")).alias("t"))

@dp.materialized_view(refresh_policy="incremental", partition_cols=["k"])
def per_part():
    return spark.read.table("psrc").groupBy("k").agg(F.count("*").alias("n"), F.max("v").alias("hi"))
"""

SQL_VIEWS = """
CREATE MATERIALIZED VIEW ranked_sql REFRESH POLICY INCREMENTAL AS
SELECT k, id, v, row_number() OVER (PARTITION BY k ORDER BY v DESC NULLS LAST, id) AS r,
       sum(v) OVER (PARTITION BY k) AS t
FROM src WHERE id > 0;
"""

RANKED = ("SELECT k, id, v, row_number() OVER (PARTITION BY k ORDER BY v DESC NULLS LAST, id) AS r, "
          "sum(v) OVER (PARTITION BY k) AS t FROM delta.`{src}` WHERE id > 0")
PER_PART = "SELECT k, count(*) AS n, max(v) AS hi FROM delta.`{psrc}` GROUP BY k"


def _check(spark, kit: Kit) -> None:
    src, psrc = kit.table("src"), kit.table("psrc")
    assert rows(spark, kit.table("ranked")) == rows(spark, spark.sql(RANKED.format(src=src)))
    assert rows(spark, kit.table("ranked_sql")) == rows(spark, kit.table("ranked"))
    assert rows(spark, kit.table("per_part")) == rows(spark, spark.sql(PER_PART.format(psrc=psrc)))


def _added_keys(spark, path: str, version: int) -> set[str | None]:
    """The partition values of the files the view's commit ``version`` added."""
    import json

    log = Path(path) / "_delta_log" / f"{version:020d}.json"
    return {json.loads(line)["add"]["partitionValues"].get("k") for line in log.read_text().splitlines()
            if '"add"' in line}


def _output_rows(result, view: str) -> int | None:
    return next(f.num_output_rows for f in result.flows if f.target.endswith(view))


def test_window_and_partitions_after_appends_deletes_updates(spark, tmp_path: Path) -> None:
    kit = Kit(tmp_path, VIEWS, {"views.py": VIEWS, "views.sql": SQL_VIEWS})
    kit.land([{"id": i, "k": k, "v": i * 3 % 7} for i, k in enumerate("aabbcc", start=1)] +
             [{"id": 9, "k": None, "v": 4}])
    assert kit.run().succeeded
    _check(spark, kit)
    kit.land([{"id": 10, "k": "a", "v": 6}, {"id": 11, "k": "a", "v": None}])
    result = kit.run()
    assert result.succeeded
    _check(spark, kit)
    assert chosen(kit.planning(spark, "ranked")[-1]) == WINDOW_FUNCTION
    assert chosen(kit.planning(spark, "ranked_sql")[-1]) == WINDOW_FUNCTION
    assert _output_rows(result, "ranked") == 4  # the partition k = 'a' only
    assert chosen(kit.planning(spark, "per_part")[-1]) == PARTITION_OVERWRITE
    assert _added_keys(spark, kit.table("per_part"), _newest(spark, kit.table("per_part"))) == {"a"}
    for table in ("src", "psrc"):
        spark.sql(f"DELETE FROM delta.`{kit.table(table)}` WHERE id = 3")  # key b
        spark.sql(f"UPDATE delta.`{kit.table(table)}` SET v = 100 WHERE id = 9")  # key NULL
    result = kit.run()
    assert result.succeeded
    _check(spark, kit)
    assert chosen(kit.planning(spark, "ranked")[-1]) == WINDOW_FUNCTION
    assert chosen(kit.planning(spark, "per_part")[-1]) == PARTITION_OVERWRITE
    # src's first file held every key: the DELETE rewrote it, so every window partition was touched
    assert _output_rows(result, "ranked") == 8
    assert _added_keys(spark, kit.table("per_part"), _newest(spark, kit.table("per_part"))) == {"b", None}
    assert kit.run().succeeded  # nothing new
    assert chosen(kit.planning(spark, "ranked")[-1]) == "NO_OP"
    assert chosen(kit.planning(spark, "per_part")[-1]) == "NO_OP"


def _newest(spark, path: str) -> int:
    from delta.tables import DeltaTable

    return int(DeltaTable.forPath(spark, path).history(1).collect()[0].version)


def test_predicate_selects_exactly_the_key_values(spark) -> None:
    """The replaceWhere predicate's literals are exact in Spark: quotes and backslashes, NULLs, dates,
    decimals, booleans and several key columns."""
    import datetime
    from decimal import Decimal

    from framework.incremental.keyed import predicate

    df = spark.sql("SELECT * FROM VALUES ('it''s \\\\ x', DATE'2024-01-02', 1.50BD, true), "
                   "('b', DATE'2024-01-03', 2.25BD, false), (NULL, NULL, NULL, NULL) AS t(s, d, m, b)")
    types = ("string", "date", "decimal(3,2)", "boolean")
    wanted = {("it's \\ x", datetime.date(2024, 1, 2), Decimal("1.50"), True), (None, None, None, None)}
    condition = predicate(("s", "d", "m", "b"), types, wanted)
    assert sorted(df.where(condition).collect(), key=repr) == sorted(
        [r for r in df.collect() if tuple(r) in wanted], key=repr)
    assert {r.s for r in df.where(predicate(("s",), ("string",), {("it's \\ x",), (None,)})).collect()} == \
        {"it's \\ x", None}

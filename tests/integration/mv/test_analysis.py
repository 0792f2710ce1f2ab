"""The plan analysis on real analyzed plans (issue 37): which technique each query shape allows, Databricks'
reasons for the others, and the one private entry point it uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.incremental.analysis import (
    APPEND_ONLY,
    GROUP_AGGREGATE,
    PARTITION_OVERWRITE,
    ROW_BASED,
    WINDOW_FUNCTION,
    analyze,
)
from framework.incremental.plan_json import ENTRY_POINT, analyzed_plan

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def src(spark, tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("analysis") / "src")
    spark.sql("SELECT id, CAST(id % 3 AS STRING) AS k, id * 2 AS v FROM range(10)").write.format("delta").save(path)
    return path


def _issues(spark, sql: str, technique: str) -> set[str]:
    return {i.issue_type for i in analyze(analyzed_plan(spark.sql(sql))).issues[technique]}


def test_entry_point_smoke(spark) -> None:
    """Fails naming the private entry point when a Spark upgrade changes it."""
    try:
        plan = analyzed_plan(spark.range(3).where("id > 1"))
    except Exception as exc:  # pragma: no cover - only on an incompatible Spark
        pytest.fail(f"{ENTRY_POINT} no longer works: {exc!r}")
    assert [n["class"].rsplit(".", 1)[-1] for n in plan] == ["Filter", "Range"]


@pytest.mark.parametrize(("query", "technique"), [
    ("SELECT id, v + 1 AS w FROM delta.`{src}` WHERE k = '1'", APPEND_ONLY),
    ("SELECT * FROM delta.`{src}` UNION ALL SELECT * FROM delta.`{src}`", APPEND_ONLY),
    ("SELECT k, count(*) AS n, sum(v) AS s, min(v) AS lo, max(id) AS hi FROM delta.`{src}` WHERE v > 2 GROUP BY k",
     GROUP_AGGREGATE),
    ("SELECT count(*) AS n FROM delta.`{src}`", GROUP_AGGREGATE),
    ("SELECT a.id, b.v FROM delta.`{src}` a JOIN delta.`{src}` b ON a.id = b.id WHERE a.v > 1", ROW_BASED),
    ("SELECT a.id, b.v FROM delta.`{src}` a CROSS JOIN delta.`{src}` b", ROW_BASED),
    ("SELECT a.id, b.v FROM delta.`{src}` a LEFT JOIN delta.`{src}` b ON a.id = b.id", ROW_BASED),
    ("SELECT a.id FROM delta.`{src}` a LEFT ANTI JOIN delta.`{src}` b ON a.id = b.v", ROW_BASED),
    ("SELECT n AS total, k AS key FROM (SELECT k, count(v) AS n FROM delta.`{src}` GROUP BY k)", GROUP_AGGREGATE),
])
def test_incrementalizable(spark, src: str, query: str, technique: str) -> None:
    analysis = analyze(analyzed_plan(spark.sql(query.format(src=src))))
    assert analysis.applicable(technique), analysis.issues[technique]
    assert analysis.relations >= 1


@pytest.mark.parametrize(("query", "technique", "issue"), [
    ("SELECT id, rand() AS r FROM delta.`{src}`", APPEND_ONLY, "NON_DETERMINISTIC"),
    ("SELECT id, current_timestamp() AS t FROM delta.`{src}`", APPEND_ONLY, "NON_DETERMINISTIC"),
    ("SELECT * FROM (SELECT k, count(*) AS n FROM delta.`{src}` GROUP BY k) WHERE n > 1", GROUP_AGGREGATE,
     "NO_GROUP_AGGREGATE"),
    ("SELECT * FROM (SELECT k, count(*) AS n FROM delta.`{src}` GROUP BY k) WHERE n > 1", APPEND_ONLY,
     "AGGREGATE_NOT_TOP_NODE"),
    ("SELECT avg(v) AS a FROM delta.`{src}`", GROUP_AGGREGATE, "AGGREGATE_NOT_SUPPORTED"),  # no group to redo
    ("SELECT upper(k) AS u, avg(v) AS a FROM delta.`{src}` GROUP BY upper(k)", GROUP_AGGREGATE,
     "AGGREGATE_NOT_SUPPORTED"),
    ("SELECT id, row_number() OVER (ORDER BY id) AS r FROM delta.`{src}`", APPEND_ONLY,
     "WINDOW_WITHOUT_PARTITION_BY"),
    ("SELECT id, row_number() OVER (PARTITION BY k ORDER BY id) AS r FROM delta.`{src}`", APPEND_ONLY,
     "WINDOW_IN_QUERY"),
    ("SELECT id, row_number() OVER (ORDER BY id) AS r FROM delta.`{src}`", WINDOW_FUNCTION,
     "WINDOW_WITHOUT_PARTITION_BY"),
    ("SELECT id, row_number() OVER (PARTITION BY k ORDER BY id) AS r FROM delta.`{src}`", WINDOW_FUNCTION,
     "NO_KEY_COLUMN"),  # k is not a column of the view: its partitions cannot be told apart in it
    ("SELECT k, id, row_number() OVER (PARTITION BY upper(k) ORDER BY id) AS r FROM delta.`{src}`", WINDOW_FUNCTION,
     "NO_KEY_COLUMN"),
    ("SELECT k, v, rank() OVER (PARTITION BY k ORDER BY v) AS r, sum(v) OVER (PARTITION BY v) AS t "
     "FROM delta.`{src}`", WINDOW_FUNCTION, "NO_KEY_COLUMN"),  # no column partitions both windows
    ("SELECT k, id, row_number() OVER (PARTITION BY k ORDER BY id) AS r FROM delta.`{src}` a "
     "JOIN delta.`{src}` b USING (k, id)", WINDOW_FUNCTION, "OPERATOR_NOT_SUPPORTED"),
    ("SELECT k, id, row_number() OVER (PARTITION BY k ORDER BY rand()) AS r FROM delta.`{src}`", WINDOW_FUNCTION,
     "NON_DETERMINISTIC"),
    ("SELECT k, count(*) AS n FROM delta.`{src}` GROUP BY k", WINDOW_FUNCTION, "NO_WINDOW"),
    ("SELECT count(*) AS n FROM delta.`{src}` GROUP BY k", PARTITION_OVERWRITE, "NO_KEY_COLUMN"),
    ("SELECT a.id FROM delta.`{src}` a JOIN delta.`{src}` b ON a.id = b.id", APPEND_ONLY, "JOIN_IN_QUERY"),
    ("SELECT a.id FROM delta.`{src}` a FULL JOIN delta.`{src}` b ON a.id = b.id", ROW_BASED, "JOIN_TYPE_NOT_SUPPORTED"),
    ("SELECT k, count(*) AS n FROM delta.`{src}` a JOIN delta.`{src}` b USING (k) GROUP BY k", ROW_BASED,
     "AGGREGATE_IN_QUERY"),
    ("SELECT id FROM delta.`{src}` WHERE v > 1", ROW_BASED, "NO_JOIN"),
    ("SELECT id FROM delta.`{src}` ORDER BY id LIMIT 3", APPEND_ONLY, "OPERATOR_NOT_SUPPORTED"),
    ("SELECT id FROM range(5)", APPEND_ONLY, "INPUT_NOT_DELTA"),
])
def test_not_incrementalizable(spark, src: str, query: str, technique: str, issue: str) -> None:
    assert issue in _issues(spark, query.format(src=src), technique)


@pytest.mark.parametrize(("query", "keys"), [
    ("SELECT k AS key, id, row_number() OVER (PARTITION BY k ORDER BY id) AS r FROM delta.`{src}` WHERE v > 1",
     {("key", "k")}),
    ("SELECT * FROM (SELECT k, id, v, rank() OVER (PARTITION BY k, v ORDER BY id) AS r, "
     "sum(id) OVER (PARTITION BY v, k) AS t FROM delta.`{src}`) WHERE r <= 2", {("k", "k"), ("v", "v")}),
    ("SELECT k, d, sum(n) OVER (PARTITION BY k) AS t FROM "
     "(SELECT k, v AS d, count(*) AS n FROM delta.`{src}` GROUP BY k, v)", {("k", "k")}),
])
def test_window_keys(spark, src: str, query: str, keys: set[tuple[str, str]]) -> None:
    """A window view's keys: the view columns that are input columns every PARTITION BY and GROUP BY keeps."""
    analysis = analyze(analyzed_plan(spark.sql(query.format(src=src))))
    assert analysis.applicable(WINDOW_FUNCTION), analysis.issues[WINDOW_FUNCTION]
    assert analysis.applicable(PARTITION_OVERWRITE)
    assert set(analysis.keyed) == keys


@pytest.mark.parametrize("query", [
    "SELECT k, avg(v) AS a FROM delta.`{src}` GROUP BY k",
    "SELECT k, count(DISTINCT v) AS d FROM delta.`{src}` GROUP BY k",
    "SELECT k, sum(v) * 2 AS s FROM delta.`{src}` GROUP BY k",
    "SELECT k, count(*) AS n FROM delta.`{src}` GROUP BY k, v",
])
def test_groups_recomputed_when_not_merged(spark, src: str, query: str) -> None:
    """GROUP_AGGREGATE recomputes the changed groups of what it cannot merge (the reason kept)."""
    analysis = analyze(analyzed_plan(spark.sql(query.format(src=src))))
    assert analysis.applicable(GROUP_AGGREGATE) and analysis.by_groups and analysis.keyed == (("k", "k"),)
    assert {i.issue_type for i in analysis.merge_issues} <= {"AGGREGATE_NOT_SUPPORTED"}


def test_the_sides_a_join_does_not_preserve(spark, src: str) -> None:
    """ROW_BASED over a left or right join: the relations on the side the join does not preserve are named (by
    their first column), with the join's type; the query is linear in the others."""
    a = spark.read.format("delta").load(src)
    b = spark.read.format("delta").load(src).withColumnRenamed("id", "bid")
    c = spark.read.format("delta").load(src).withColumnRenamed("id", "cid")
    first = [next(n["output"][0][0]["exprId"]["id"] for n in analyzed_plan(df) if n.get("output"))
             for df in (a, b, c)]
    query = a.join(b, "k", "left").join(c, "k", "right").select("id", "bid", "cid")
    analysis = analyze(analyzed_plan(query))
    assert analysis.applicable(ROW_BASED), analysis.issues[ROW_BASED]
    assert analysis.fixed == {first[0]: "RightOuter", first[1]: "RightOuter"}  # the right join's left side
    assert set(analysis.relation_ids) == set(first)
    left = analyze(analyzed_plan(a.join(b, "k", "left").join(c, "k").select("id", "bid", "cid")))
    assert left.applicable(ROW_BASED) and left.fixed == {first[1]: "LeftOuter"}


def test_join_keys_of_the_sides_a_join_does_not_preserve(spark, src: str) -> None:
    """A non-preserved side that is one relation is keyed by the first equality of the condition between its
    columns (renamed or not) and a preserved relation's (``=`` or ``<=>``, either order, among other conjuncts),
    with the view column that outputs the preserved one, if any; none when the condition equates expressions or
    the side holds two relations."""
    from pyspark.sql import functions as F

    from framework.incremental.analysis import JoinKey

    a = spark.read.format("delta").load(src)
    b = spark.read.format("delta").load(src).withColumnRenamed("id", "bid").withColumnRenamed("k", "bk")
    c = spark.read.format("delta").load(src).withColumnRenamed("id", "cid")
    first = [next(n["output"][0][0]["exprId"]["id"] for n in analyzed_plan(df) if n.get("output"))
             for df in (a, b, c)]
    keyed = analyze(analyzed_plan(a.join(b, (a.id < b.bid) & (b.bk == a.k), "left")))
    assert keyed.fixed_keys == {first[1]: JoinKey(first[0], "k", "k", "k")}  # the relation's column names
    renamed = a.join(b, b.bk.eqNullSafe(a.k), "left").select(a.k.alias("key"), "bid")
    assert analyze(analyzed_plan(renamed)).fixed_keys == {first[1]: JoinKey(first[0], "k", "k", "key")}
    assert analyze(analyzed_plan(b.join(a, b.bk == a.k, "right").select("id", "bid"))).fixed_keys == \
        {first[1]: JoinKey(first[0], "k", "k", None)}  # the view does not output the key
    assert analyze(analyzed_plan(a.join(b, F.upper(a.k) == F.upper(b.bk), "left"))).fixed_keys == {}
    two = analyze(analyzed_plan(a.join(b.join(c, b.bk == c.k), a.k == b.bk, "left_semi")))
    assert set(two.fixed) == {first[1], first[2]} and two.fixed_keys == {}


def test_udf(spark, src: str) -> None:
    from pyspark.sql import functions as F

    twice = F.udf(lambda v: v * 2, "bigint")
    df = spark.read.format("delta").load(src).select(twice("v").alias("w"))
    assert "UDF" in {i.issue_type for i in analyze(analyzed_plan(df)).issues[APPEND_ONLY]}


def test_sql_and_python_same_plan(spark, src: str) -> None:
    """The same view in SQL and in Python: the same technique, columns and fingerprint."""
    from pyspark.sql import functions as F

    sql = analyze(analyzed_plan(spark.sql(
        f"SELECT k, count(*) AS n, sum(v) AS s FROM delta.`{src}` WHERE v > 2 GROUP BY k")))
    python = analyze(analyzed_plan(spark.read.format("delta").load(src).where("v > 2").groupBy("k")
                                   .agg(F.count("*").alias("n"), F.sum("v").alias("s"))))
    assert sql.columns == python.columns
    assert sql.applicable(GROUP_AGGREGATE) and python.applicable(GROUP_AGGREGATE)


def test_fingerprint_changes_with_the_query(spark, src: str, tmp_path: Path) -> None:
    one = analyze(analyzed_plan(spark.sql(f"SELECT id FROM delta.`{src}` WHERE v > 2")))
    again = analyze(analyzed_plan(spark.sql(f"SELECT id FROM delta.`{src}` WHERE v > 2")))
    other = analyze(analyzed_plan(spark.sql(f"SELECT id FROM delta.`{src}` WHERE v > 3")))
    assert one.fingerprint == again.fingerprint != other.fingerprint

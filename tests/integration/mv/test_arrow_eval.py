"""The driver's Arrow evaluation of a refresh's query over appended files (issue 37,
framework/incremental/arrow_eval.py) against Spark's own result of the same plan over the same files, on seeded
random rows with NULLs; and the plans it leaves to Spark."""

from __future__ import annotations

import glob
import random
from pathlib import Path

import pytest

from framework.incremental.arrow_eval import evaluate
from framework.incremental.plan_json import analyzed_plan

pytestmark = pytest.mark.spark

SCHEMA = "id bigint, k string, v int, b boolean"

EVALUATED = [
    "SELECT * FROM t",
    "SELECT id, k, v * 2 AS v2 FROM t WHERE v < 3",
    "SELECT id, v + 1 AS w, v - id AS d FROM t WHERE NOT (k = 'a') OR k IS NULL",
    "SELECT id FROM t WHERE k <=> NULL AND (b OR v >= 0)",
    "SELECT k, count(*) AS n, count(v) AS nv, sum(v) AS s, min(v) AS lo, max(k) AS hi FROM t GROUP BY k",
    "SELECT k, b, count(*) AS n, sum(id) AS s FROM t WHERE id > 3 GROUP BY k, b",
    "SELECT count(*) AS n, sum(v) AS s, min(k) AS lo, max(b) AS hi FROM t",
    "SELECT count(*) AS n, sum(v) AS s FROM t WHERE id < 0",
    "SELECT n AS total, k AS key FROM (SELECT k, count(v) AS n FROM t GROUP BY k)",
    "SELECT a.id, b.id AS id2, a.k FROM t a JOIN t b ON a.k = b.k AND a.id < b.id",
    "SELECT a.id, b.v, b.k FROM t a JOIN t b ON b.id = a.id WHERE a.v > 1",
    "SELECT a.id, b.b FROM t a JOIN t b USING (k, v)",
]
LEFT_TO_SPARK = [
    "SELECT id, v % 3 AS r FROM t",
    "SELECT id, upper(k) AS u FROM t",
    "SELECT k, avg(v) AS a FROM t GROUP BY k",
    "SELECT id, CAST(v AS string) AS s FROM t",
    "SELECT a.id FROM t a LEFT JOIN t b ON a.id = b.id",
    "SELECT a.id FROM t a CROSS JOIN t b",
]


@pytest.fixture(scope="module")
def files(spark, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ...]:
    rng = random.Random(37)
    rows = [(i, rng.choice(["a", "b", None]), rng.choice([None, rng.randint(-4, 6)]), rng.choice([True, False, None]))
            for i in range(60)]
    folder = Path(tmp_path_factory.mktemp("arrow_eval")) / "t"
    spark.createDataFrame(rows, SCHEMA).repartition(3).write.parquet(str(folder))
    return tuple(sorted(glob.glob(str(folder / "*.parquet"))))


def _frame(spark, files: tuple[str, ...], query: str):
    spark.read.schema(SCHEMA).parquet(*files).createOrReplaceTempView("t")
    return spark.sql(query)


def _rows(table) -> list[tuple]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


@pytest.mark.parametrize("query", EVALUATED)
def test_arrow_equals_spark(spark, files: tuple[str, ...], query: str) -> None:
    df = _frame(spark, files, query)
    evaluated = evaluate(analyzed_plan(df), files)
    assert evaluated is not None, query
    assert _rows(evaluated.rename_columns(df.columns)) == _rows(df.toArrow())


@pytest.mark.parametrize("query", LEFT_TO_SPARK)
def test_left_to_spark(spark, files: tuple[str, ...], query: str) -> None:
    assert evaluate(analyzed_plan(_frame(spark, files, query)), files) is None

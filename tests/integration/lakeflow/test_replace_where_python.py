"""Issue 36: REPLACE WHERE flows in Python, as Databricks' REPLACE WHERE page declares them
(``@dp.table(replace_where=...)``, a Column or a SQL string; the flow takes the table's name), and a backfill's
predicate override for one update (the start-update API's ``replace_where_overrides``; ``UpdateOptions`` and
``medallion run --replace-where-override`` here): the next update uses the declared predicate again."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.runner.update import UpdateOptions, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PYTHON = """
from pyspark import pipelines as dp
from pyspark.sql.functions import col

@dp.materialized_view
def sales():
    return spark.read.format("json").schema("id BIGINT, region STRING, amount BIGINT").load("{landing}")

@dp.table(replace_where=col("region") == "eu")
def eu_sales():
    return spark.read.table("sales")

@dp.table(replace_where="amount >= 10", comment="big sales only")
def big_sales():
    return spark.read.table("sales").select("id", "amount")
"""


def _rows(spark: SparkSession, spec: object, table: str) -> list[tuple[object, ...]]:
    df = spark.read.format("delta").load(str(spec.tables_dir / table))  # type: ignore[attr-defined]
    return sorted(tuple(r) for r in df.collect())


def _land(landing: Path, *rows: tuple[int, str, int]) -> None:
    for old in landing.glob("*.json"):
        old.unlink()
    write_json_lines(landing, "rows.json", [f'{{"id": {i}, "region": "{r}", "amount": {a}}}' for i, r, a in rows])


def test_python_replace_where_flows_and_a_backfill_override(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    _land(landing, (1, "eu", 5), (2, "eu", 20), (3, "us", 30))
    spec = make_pipeline(tmp_path, {"flows.py": PYTHON.format(landing=landing)})
    first = run_update(spec, UpdateOptions(), spark=spark)
    assert first.succeeded, first.error or [f.error for f in first.flows]
    assert first.kinds["eu_sales"] == "streaming_table"
    assert _rows(spark, spec, "eu_sales") == [(1, "eu", 5), (2, "eu", 20)]
    assert _rows(spark, spec, "big_sales") == [(2, 20), (3, 30)]

    # a backfill: this update replaces eu and us rows of eu_sales; big_sales keeps its own predicate
    _land(landing, (1, "eu", 6), (3, "us", 31), (4, "us", 2))
    backfill = run_update(spec, UpdateOptions(replace_where_overrides={"eu_sales": "region IN ('eu', 'us')"}),
                          spark=spark)
    assert backfill.succeeded, backfill.error or [f.error for f in backfill.flows]
    assert _rows(spark, spec, "eu_sales") == [(1, "eu", 6), (3, "us", 31), (4, "us", 2)]
    assert _rows(spark, spec, "big_sales") == [(3, 31)]

    # the override was for one update: the next replaces eu rows only, the backfilled us rows stay
    _land(landing, (1, "eu", 7), (3, "us", 99))
    after = run_update(spec, UpdateOptions(), spark=spark)
    assert after.succeeded, after.error or [f.error for f in after.flows]
    assert _rows(spark, spec, "eu_sales") == [(1, "eu", 7), (3, "us", 31), (4, "us", 2)]


def test_an_override_must_name_a_replace_where_flow(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    _land(landing, (1, "eu", 5))
    spec = make_pipeline(tmp_path, {"flows.py": PYTHON.format(landing=landing)})
    result = run_update(spec, UpdateOptions(replace_where_overrides={"sales": "id = 1"}), spark=spark)
    assert not result.succeeded and result.error is not None
    assert result.error.code == "REPLACE_WHERE_OVERRIDE_UNKNOWN_FLOW"
    assert "big_sales" in str(result.error) and "eu_sales" in str(result.error)


def test_the_test_kit_runs_a_backfill_override(spark: SparkSession, tmp_path: Path) -> None:
    """``run_again(replace_where_overrides=...)``: the test kit's backfill, for one update."""
    from framework.testing import run_pipeline

    landing = tmp_path / "landing"
    _land(landing, (1, "eu", 5), (3, "us", 30))
    folder = tmp_path / "kit"
    folder.mkdir()
    (folder / "flows.py").write_text(PYTHON.format(landing=landing))
    run = run_pipeline(spark, folder, tmp_path=tmp_path)
    assert run.succeeded, run.error
    _land(landing, (1, "eu", 6), (3, "us", 31))
    backfill = run.run_again(replace_where_overrides={"eu_sales": "region IN ('eu', 'us')"})
    assert backfill.succeeded, backfill.error
    rows = sorted(tuple(r) for r in backfill.table("eu_sales").collect())
    assert rows == [(1, "eu", 6), (3, "us", 31)]

"""Issue 36: in a warm session (``medallion serve`` runs every update in one SparkSession, and puts its settings
back after each request: ``framework/serve/session_state.py``), a catalog keeps no mapping from an earlier
pipeline. Spark keeps a catalog plugin once loaded; the framework's reads its schema prefix from the session's
settings at each call, and every update sets it for its own pipeline."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.runner.update import UpdateOptions, run_update
from framework.serve.session_state import SessionBaseline
from framework.spec import parse_spec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


def _spec(root: Path, catalog: str, python: str) -> object:
    (root / "pipeline").mkdir(parents=True)
    (root / "pipeline" / "p.py").write_text(python)
    raw = {"name": f"warm_{catalog}", "libraries": [{"glob": {"include": "pipeline/**"}}], "storage": "storage",
           "catalog": catalog, "schema": "s"}
    return parse_spec(raw, source=str(root / "spec.yaml"), default_root=root)


FIRST = """
from pyspark import pipelines as dp

@dp.materialized_view(name="wb.s.seen_by_a")
def seen_by_a():
    return spark.range(2)
"""

SECOND = """
from pyspark import pipelines as dp

@dp.materialized_view
def own():
    return spark.range(5)

@dp.materialized_view
def reads_own_catalog():
    return spark.read.table("wb.s.before")
"""


def test_a_later_pipeline_maps_a_catalog_its_own_way(spark: SparkSession, tmp_path: Path) -> None:
    baseline = SessionBaseline(spark)
    first = run_update(_spec(tmp_path / "a", "wa", FIRST), UpdateOptions(), spark=spark)  # type: ignore[arg-type]
    assert first.succeeded, first.error
    assert spark.read.table("wb.s.seen_by_a").count() == 2  # wb is another catalog for A: database wb__s
    assert spark.catalog.tableExists("wb__s.seen_by_a")
    baseline.restore()  # the end of a serve request

    spark.sql("CREATE DATABASE IF NOT EXISTS s")
    spark.range(3).write.format("delta").mode("overwrite").saveAsTable("s.before")
    second = run_update(_spec(tmp_path / "b", "wb", SECOND), UpdateOptions(), spark=spark)  # type: ignore[arg-type]
    assert second.succeeded, second.error or [f.error for f in second.flows]
    # wb is B's own catalog: the session catalog under its name, so wb.s.x is s.x (A's prefix is not kept)
    assert spark.read.table("wb.s.own").count() == 5 and spark.read.table("s.own").count() == 5
    assert spark.read.table("wb.s.reads_own_catalog").count() == 3
    baseline.restore()

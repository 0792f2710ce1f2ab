"""Issue 36's defects found in real Python pipelines: a spec ``tables:`` table read at a pipeline file's top
level is a plain Spark read (notebooks read a reference table's schema there), not ``NO_ACTIVE_FLOW``."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.errors import PipelineError
from framework.testing import assert_df_equal, run_pipeline

pytestmark = pytest.mark.spark

PIPELINE = '''
from pyspark import pipelines as dp

REGION_COLUMNS = spark.read.table("ref.regions").columns  # top level: a plain read
REGION_COUNT = spark.table("ref.regions").count()

@dp.table(comment=",".join(REGION_COLUMNS) + f" ({REGION_COUNT})")
def countries():
    return spark.read.table("ref.regions").select(*REGION_COLUMNS)
'''

TOP_LEVEL_DATASET_READ = '''
from pyspark import pipelines as dp

@dp.table
def a():
    return spark.range(1)

B = spark.read.table("a")  # a pipeline dataset: only a query function reads it
'''

REGIONS = ([("DE", "EU"), ("US", "NA")], "country string, region string")


def test_top_level_read_of_a_spec_table(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "p.py").write_text(PIPELINE)
    run = run_pipeline(spark, folder, tmp_path=tmp_path, schema="lf_top_level", tables={"ref.regions": REGIONS})
    assert run.succeeded, run.error
    assert_df_equal(run.table("countries"), [("DE", "EU"), ("US", "NA")])
    (folder / "p.py").write_text(TOP_LEVEL_DATASET_READ)
    bad = run_pipeline(spark, folder, tmp_path=tmp_path / "bad", schema="lf_top_level_bad")
    assert not bad.succeeded
    assert isinstance(bad.error, PipelineError) and bad.error.code == "NO_ACTIVE_FLOW", bad.error
    assert "p.py:8" in str(bad.error)

"""``medallion validate`` tells per materialized view whether it refreshes incrementally and why not (issue 37),
as Databricks' EXPLAIN CREATE MATERIALIZED VIEW does, without running the pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.cli import main
from tests.reliability.helpers import write_spec

pytestmark = pytest.mark.spark

PIPELINE = """
import dlt
from pyspark import pipelines as dp
from pyspark.sql import functions as F

@dlt.table
def src():
    return spark.readStream.format("json").schema("id bigint, k string, v bigint").load(spark.conf.get("landing"))

@dp.materialized_view
def per_k():
    return spark.read.table("src").groupBy("k").agg(F.count("*").alias("n"))

@dp.materialized_view(refresh_policy="incremental_strict")
def ranked():
    return spark.read.table("src").selectExpr("id", "row_number() OVER (ORDER BY id) AS r")

@dp.materialized_view
def top_per_k():
    return spark.read.table("src").selectExpr("k", "id", "row_number() OVER (PARTITION BY k ORDER BY id) AS r")

@dp.materialized_view(refresh_policy="full")
def copy():
    return spark.read.table("src")
"""


def test_validate_explains_each_view(tmp_path: Path, capsys) -> None:
    (tmp_path / "landing").mkdir()
    spec = write_spec(tmp_path, {"p.py": PIPELINE}, configuration={"landing": str(tmp_path / "landing")})
    assert main(["validate", str(spec)]) == 0
    out = capsys.readouterr().out
    lines = {line.split("->")[0].strip(): line for line in out.splitlines() if "->" in line}
    text = out.splitlines()
    explained = {text[i - 1].split("->")[0].strip(): text[i] for i in range(1, len(text)) if "refresh:" in text[i]}
    assert set(explained) == {"per_k", "ranked", "top_per_k", "copy"}, out
    assert "incremental (WINDOW_FUNCTION) recomputing the window partitions (k)" in explained["top_per_k"]
    assert "incremental (GROUP_AGGREGATE)" in explained["per_k"]
    assert "WINDOW_WITHOUT_PARTITION_BY" in explained["ranked"] and "STRICT fails" in explained["ranked"]
    assert "always a full recompute" in explained["copy"]
    assert lines

"""kill -9 during an incremental refresh of materialized views (GROUP_AGGREGATE, APPEND_ONLY, ROW_BASED of an
inner join and, by the join key, of a left join whose both sides change, WINDOW_FUNCTION), then a rerun (issue 37): the views equal a full recompute of their queries, the refresh
completed exactly once or recomputed.

Each round lands new input, starts ``medallion run`` in a fresh process and kills its process group a delay
after the view's flow printed "starting" (between planning, the refresh record, the data commit and the event
log), then runs the next update in this process and compares.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from framework.runner.update import UpdateOptions, run_update
from framework.spec import load_spec
from tests.integration.mv.kit import rows
from tests.reliability.helpers import write_spec
from tests.reliability.test_kill_and_rerun import run_and_kill

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PIPELINE = """
import dlt
from pyspark import pipelines as dp
from pyspark.sql import Window
from pyspark.sql import functions as F

@dlt.table
def src():
    return spark.readStream.format("json").schema("id bigint, k string, v bigint").load(spark.conf.get("landing"))

@dp.materialized_view(refresh_policy="incremental")
def per_k():
    return spark.read.table("src").groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("s"))

@dp.materialized_view(refresh_policy="incremental")
def big():
    return spark.read.table("src").where("v > 3").select("id", "k")

@dp.materialized_view(refresh_policy="incremental")
def joined():
    a = spark.read.table("src")
    b = spark.read.table("src").select(F.col("k").alias("k2"), F.col("id").alias("id2"))
    return a.join(b, (a.k == b.k2) & (a.id < b.id2)).select("id", "id2", "k")

@dp.materialized_view(refresh_policy="incremental")
def padded():
    a = spark.read.table("src")
    b = spark.read.table("src").where("v > 5").select(F.col("k").alias("k2"), F.col("id").alias("id2"))
    return a.join(b, a.k == b.k2, "left").select("id", "k", "id2")

@dp.materialized_view(refresh_policy="incremental")
def ranked():
    return spark.read.table("src").select("k", "id", F.rank().over(Window.partitionBy("k").orderBy("v", "id")).alias("r"))
"""

QUERIES = {"per_k": "SELECT k, count(*) AS n, sum(v) AS s FROM delta.`{src}` GROUP BY k",
           "big": "SELECT id, k FROM delta.`{src}` WHERE v > 3",
           "joined": "SELECT a.id, b.id AS id2, a.k FROM delta.`{src}` a JOIN delta.`{src}` b ON a.k = b.k "
                     "AND a.id < b.id",
           "padded": "SELECT a.id, a.k, b.id AS id2 FROM delta.`{src}` a LEFT JOIN "
                     "(SELECT k, id FROM delta.`{src}` WHERE v > 5) b ON a.k = b.k",
           "ranked": "SELECT k, id, rank() OVER (PARTITION BY k ORDER BY v, id) AS r FROM delta.`{src}`"}


def _land(landing: Path, batch: int) -> None:
    landing.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": batch * 10 + i, "k": "abc"[i % 3], "v": i}) for i in range(6)]
    (landing / f"b{batch:03d}.json").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("flow", ["per_k", "big", "joined", "padded", "ranked"])
def test_killed_refresh_then_rerun_equals_recompute(spark: SparkSession, tmp_path: Path, flow: str) -> None:
    landing = tmp_path / "landing"
    spec_file = write_spec(tmp_path, {"p.py": PIPELINE}, name="mvkill", configuration={"landing": str(landing)})
    spec = load_spec(spec_file)
    _land(landing, 0)
    assert run_update(spec, UpdateOptions()).succeeded
    for batch, delay in enumerate((0.3, 1.2, 2.5), start=1):
        _land(landing, batch)
        run_and_kill(spec_file, flow, delay)
        result = run_update(spec, UpdateOptions())
        assert result.succeeded, result.error
        src = str(spec.tables_dir / "src")
        for view, query in QUERIES.items():
            assert rows(spark, str(spec.tables_dir / view)) == rows(spark, spark.sql(query.format(src=src))), \
                f"{view} after a kill {delay}s into {flow} (batch {batch})"

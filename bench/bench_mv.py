"""Incremental materialized views (issue 37): an update after 1 % new input, the incrementally refreshed view
against its full recompute, in the same update of the same pipeline on the same data.

The pipeline streams a generated Delta table (``--rows``, default 10,000,000 at scale 1) into ``src`` and a
1,000-row one into ``dim``, and keeps eight views: a group-by aggregate (count, sum, min, max over 1,000 groups),
a filter-projection, a join of ``src`` with ``dim`` (filtered and projected) and a window view partitioned by
``day`` (each day's ten largest ``v`` with their rank and the day's total; ``src`` has 100 days, and each 1 %
of new rows is a new day), each twice, with ``REFRESH POLICY AUTO`` (the default: the cost model picks
GROUP_AGGREGATE / APPEND_ONLY / ROW_BASED / WINDOW_FUNCTION) and with ``REFRESH POLICY FULL`` (Databricks' full recompute, which open-source ``spark-pipelines`` always does). Each run appends
1 % rows to the generated table and runs one update with one flow at a time; the figures are the views' flow
times, after one such update unmeasured (the warm-up of the incremental code paths in the process, as the
initial update was the recompute's). Then updates with no new input: the incremental views' refresh (NO_OP, no
Spark job reads the inputs) on the warm session. The views are checked equal to their FULL twins at the end.

    .venv/bin/python -m bench.bench_mv [--scale 1] [--runs 3] [--rows N]
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

from bench.harness import Comparison, common_args, write_json

PIPELINE = """
import dlt
from pyspark import pipelines as dp
from pyspark.sql import Window
from pyspark.sql import functions as F

@dlt.table
def src():
    return spark.readStream.format("delta").load(spark.conf.get("raw"))

def _agg(df):
    return df.groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("s"), F.min("v").alias("lo"),
                               F.max("v").alias("hi"))

def _fp(df):
    return df.where("v < 10").select("id", "k", (F.col("v") * 2).alias("v2"))

@dp.materialized_view
def agg_inc():
    return _agg(spark.read.table("src"))

@dp.materialized_view(refresh_policy="full")
def agg_full():
    return _agg(spark.read.table("src"))

@dp.materialized_view
def fp_inc():
    return _fp(spark.read.table("src"))

@dp.materialized_view(refresh_policy="full")
def fp_full():
    return _fp(spark.read.table("src"))

@dlt.table
def dim():
    return spark.readStream.format("delta").load(spark.conf.get("dim"))

def _join(df):
    return df.join(spark.read.table("dim"), "k").where("v < 10").select("id", "k", "region", (F.col("v") * 2).alias("v2"))

@dp.materialized_view
def join_inc():
    return _join(spark.read.table("src"))

@dp.materialized_view(refresh_policy="full")
def join_full():
    return _join(spark.read.table("src"))

def _window(df):
    by_day = Window.partitionBy("day")
    return df.select("day", "id", "v", F.row_number().over(by_day.orderBy(F.col("v").desc(), "id")).alias("r"),
                     F.sum("v").over(by_day).alias("total")).where("r <= 10")

@dp.materialized_view(partition_cols=["day"])
def win_inc():
    return _window(spark.read.table("src"))

@dp.materialized_view(refresh_policy="full", partition_cols=["day"])
def win_full():
    return _window(spark.read.table("src"))
"""


# view prefix -> (the technique AUTO should pick, what the update adds, the limit on the ratio)
VIEWS = {"agg": ("GROUP_AGGREGATE", "", 0.1), "fp": ("APPEND_ONLY", "", 0.1),
         "join": ("ROW_BASED", " joined with 1,000", 0.1), "win": ("WINDOW_FUNCTION", " (a new day of 100)", 0.25)}


def _append(spark, raw: str, start: int, count: int, per_day: int, mode: str = "append") -> None:
    spark.range(start, start + count).selectExpr("id", "CAST(id % 1000 AS STRING) AS k", "id % 97 AS v",
                                                 f"id DIV {per_day} AS day") \
        .write.format("delta").mode(mode).save(raw)


def _flow_seconds(result) -> dict[str, float]:
    assert result.succeeded, result.error
    return {f.target: f.seconds for f in result.flows}


def _techniques(result) -> dict[str, str]:
    """The technique each incremental view's refresh chose (its planning_information)."""
    return {f.target: next(t["maintenance_type"].removeprefix("MAINTENANCE_TYPE_")
                           for t in f.planning["technique_information"] if t["is_chosen"])
            for f in result.flows if f.planning and f.target.endswith("_inc")}


def main() -> int:
    parser = common_args(__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None, help="input rows (default 10,000,000 x scale)")
    args = parser.parse_args()
    rows = args.rows or int(10_000_000 * args.scale)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_mv_"))
    shutil.rmtree(work / "pipeline", ignore_errors=True)
    shutil.rmtree(work / "storage", ignore_errors=True)
    shutil.rmtree(work / "raw", ignore_errors=True)
    shutil.rmtree(work / "dim", ignore_errors=True)
    (work / "pipeline").mkdir(parents=True)
    (work / "pipeline" / "views.py").write_text(textwrap.dedent(PIPELINE))
    print(f"load before: {os.getloadavg()}", file=sys.stderr, flush=True)

    from framework.runner.session import get_or_create_session
    from framework.runner.update import UpdateOptions, run_update
    from framework.spec import parse_spec

    spark = get_or_create_session()
    raw, dim = str(work / "raw"), str(work / "dim")
    step = max(1, rows // 100)
    _append(spark, raw, 0, rows, step, mode="overwrite")
    spark.range(1000).selectExpr("CAST(id AS STRING) AS k", "CAST(id % 7 AS STRING) AS region") \
        .write.format("delta").mode("overwrite").save(dim)
    spec = parse_spec({"name": "bench_mv", "libraries": [{"glob": {"include": "pipeline/**"}}],
                       "storage": "storage", "schema": "bench_mv", "configuration": {"raw": raw, "dim": dim}},
                      source=str(work / "spec.yaml"), default_root=work)
    options = UpdateOptions(max_concurrent_flows=1)
    first = run_update(spec, options)
    print(f"initial update (ingest {rows:,} rows, every view computed): {first.seconds:.1f}s", file=sys.stderr)
    comparisons = {prefix: Comparison(f"bench_mv {name}, {rows:,} rows + 1 %{more}")
                   for prefix, (name, more, _) in VIEWS.items()}
    _append(spark, raw, rows, step, step)  # warm-up: the first incremental refresh of the process loads its code paths
    _flow_seconds(run_update(spec, options))
    for i in range(args.runs):
        _append(spark, raw, rows + (i + 1) * step, step, step)
        result = run_update(spec, options)
        seconds = _flow_seconds(result)
        chosen = _techniques(result)
        for prefix, comparison in comparisons.items():
            comparison.framework_s.append(seconds[f"{prefix}_inc"])
            comparison.baseline_s.append(seconds[f"{prefix}_full"])
            comparison.extra.setdefault("chosen", []).append(chosen.get(f"{prefix}_inc"))
        print(f"  run {i + 1}/{args.runs}: {seconds} {chosen}", file=sys.stderr, flush=True)
    _check(spark, spec)
    idle = [max(_flow_seconds(run_update(spec, options))[f"{p}_inc"] for p in VIEWS) for _ in range(args.runs)]
    for comparison in comparisons.values():
        comparison.extra["rows"] = rows
        comparison.extra["small_update"] = first.small_update
    print(f"load after: {os.getloadavg()}", file=sys.stderr, flush=True)
    for prefix, comparison in comparisons.items():
        print(comparison.report(limit=VIEWS[prefix][2]))
    no_change = statistics.median(idle)
    print(f"[bench_mv NO_OP] no-change refresh (slowest of the {len(VIEWS)} views), runs: "
          f"{', '.join(f'{t:.3f}s' for t in idle)}; median {no_change:.3f}s "
          f"(limit 0.5 s: {'OK' if no_change < 0.5 else 'OVER'})")
    write_json(args.json, *comparisons.values())
    return 0


def _check(spark, spec) -> None:
    """The incremental views hold exactly their FULL twins' rows."""
    for prefix in VIEWS:
        a = spark.read.format("delta").load(str(spec.tables_dir / f"{prefix}_inc"))
        b = spark.read.format("delta").load(str(spec.tables_dir / f"{prefix}_full"))
        if a.exceptAll(b).count() or b.exceptAll(a).count():
            raise SystemExit(f"{prefix}_inc differs from {prefix}_full")


if __name__ == "__main__":
    sys.exit(main())

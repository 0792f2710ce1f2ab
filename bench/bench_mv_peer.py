"""Incremental materialized views against the peer (issue 37): the same update after 1 % new input, run by the
framework (which refreshes the views incrementally) and by open-source ``spark-pipelines run`` (which always
recomputes them), side by side.

The same pipeline file (``PIPELINE`` below, ``from pyspark import pipelines as dp`` only) runs on both sides: a
streaming table ``src`` over a generated Delta table (``--rows``, default 10,000,000 x ``--scale``), a streaming
table ``dim`` over a 1,000-row one, and four materialized views: a group-by aggregate (count, sum, min, max over
1,000 groups), a filter-projection, a join of ``src`` with ``dim``, and a window partitioned by day (top 10 per
day and the day's total). The input tables are written with delta-rs (``deltalake``) so that the benchmark holds no
JVM while the two sides run.

Each side keeps its own storage across the runs: one untimed initial update each (every row ingested, every view
computed), then ``--runs`` rounds: 1 % new rows are appended to the input, and each side runs one update as one
fresh process (JVM start included on both sides, order flipped every round):

* framework: ``python -m framework.cli run SPEC --storage S --no-report``;
* peer: ``spark-pipelines run --spec spark-pipeline.yml`` (``bench_peer``'s separate virtualenv and Spark
  settings: the same ``conf/spark.yaml``, Delta jars, Delta as the table format).

Printed: wall times per round, medians and the ratio framework / peer, the technique each view's refresh chose
(from the framework's ``planning_information`` events), and, at the end, the check that both sides' views hold the
same rows.

    .venv/bin/python -m bench.bench_mv_peer [--scale 1] [--runs 3] [--rows N]
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import textwrap
from functools import partial
from pathlib import Path

import yaml

from bench.bench_peer import REPO, ensure_sdp_venv, run_process, sdp_env, write_sdp_project
from bench.harness import Comparison, common_args, timed, write_json

PIPELINE = """
# ruff: noqa: F821
from pyspark import pipelines as dp
from pyspark.sql import Window
from pyspark.sql import functions as F


@dp.table
def src():
    return spark.readStream.format("delta").load(spark.conf.get("bench.raw"))


@dp.table
def dim():
    return spark.readStream.format("delta").load(spark.conf.get("bench.dim"))


@dp.materialized_view
def agg():
    return spark.read.table("src").groupBy("k").agg(F.count("*").alias("n"), F.sum("v").alias("s"),
                                                    F.min("v").alias("lo"), F.max("v").alias("hi"))


@dp.materialized_view
def fp():
    return spark.read.table("src").where("v < 10").select("id", "k", (F.col("v") * 2).alias("v2"))


@dp.materialized_view
def joined():
    return (spark.read.table("src").join(spark.read.table("dim"), "k").where("v < 10")
            .select("id", "k", "region", (F.col("v") * 2).alias("v2")))


@dp.materialized_view(partition_cols=["day"])
def win():
    by_day = Window.partitionBy("day")
    return (spark.read.table("src")
            .select("day", "id", "v", F.row_number().over(by_day.orderBy(F.col("v").desc(), "id")).alias("r"),
                    F.sum("v").over(by_day).alias("total"))
            .where("r <= 10"))
"""
VIEWS = ("agg", "fp", "joined", "win")


def append_rows(raw: Path, start: int, count: int, per_day: int, mode: str = "append") -> None:
    """``count`` rows with ids from ``start`` (``k``: 1,000 string groups, ``v``: 0-96, ``day``: ``per_day`` ids
    each), written to the Delta table ``raw`` by delta-rs in chunks of a million."""
    import numpy as np
    import pyarrow as pa
    from deltalake import write_deltalake

    for offset in range(0, count, 1_000_000):
        ids = np.arange(start + offset, start + min(count, offset + 1_000_000), dtype=np.int64)
        table = pa.table({"id": ids, "k": pa.array(ids % 1000).cast(pa.string()), "v": ids % 97,
                          "day": ids // per_day})
        write_deltalake(str(raw), table, mode=mode if offset == 0 else "append")


def write_dim(path: Path) -> None:
    """The 1,000-row dimension: ``k`` as in :func:`append_rows`, ``region`` one of 7."""
    import pyarrow as pa
    from deltalake import write_deltalake

    write_deltalake(str(path), pa.table({"k": [str(i) for i in range(1000)],
                                         "region": [str(i % 7) for i in range(1000)]}), mode="overwrite")


class Sides:
    """The two sides' projects in ``work``: one update of each as a fresh process (:meth:`framework`,
    :meth:`peer`), their logs, and where each keeps its views."""

    def __init__(self, work: Path, configuration: dict[str, str]) -> None:
        self.work, self.logs = work, work / "logs"
        self.logs.mkdir(exist_ok=True)
        (work / "pipeline").mkdir(exist_ok=True)
        (work / "pipeline" / "views.py").write_text(textwrap.dedent(PIPELINE))
        self.spec = work / "framework-pipeline.yml"
        self.spec.write_text(yaml.safe_dump({"name": "bench_mv_peer", "schema": "bench_mv_peer",
                                             "libraries": [{"glob": {"include": "pipeline/**"}}],
                                             "configuration": configuration}))
        self.storage = work / "fw_storage"
        self.venv = ensure_sdp_venv()
        project = work / "sdp_project"
        self.warehouse = work / "sdp_warehouse"
        self.sdp_spec = write_sdp_project(project, work, work / "sdp_storage", self.warehouse,
                                          pipeline_file=work / "pipeline" / "views.py", name="bench_mv_peer",
                                          configuration=configuration)
        # the tables must outlive one `spark-pipelines run` (its default catalog is in memory): a Hive metastore
        # in the project folder (Derby, pyspark's own jars), as a user running it update after update would have
        with (project / "conf" / "spark-defaults.conf").open("a") as conf:
            conf.write("spark.sql.catalogImplementation hive\n")

    def framework(self, i: int) -> None:
        run_process([sys.executable, "-m", "framework.cli", "run", str(self.spec), "--storage", str(self.storage),
                     "--no-report"], REPO, None, self.logs / f"framework-{i}.log")

    def peer(self, i: int) -> None:
        project = self.sdp_spec.parent
        run_process([str(self.venv / "bin" / "spark-pipelines"), "run", "--spec", str(self.sdp_spec)], project,
                    sdp_env(self.venv, project / "conf"), self.logs / f"sdp-{i}.log")

    def techniques(self) -> dict[str, str]:
        """The technique of each view's last refresh, from the framework's event log (planning_information)."""
        from deltalake import DeltaTable

        rows = DeltaTable(str(self.storage / "system" / "events")).to_pyarrow_table(
            columns=["timestamp", "event_type", "origin", "details"]).to_pylist()
        chosen: dict[str, str] = {}
        for row in sorted(rows, key=lambda r: r["timestamp"]):
            if row["event_type"] == "planning_information":
                details = json.loads(row["details"])["planning_information"]
                chosen[str((row["origin"] or {}).get("flow_name"))] = next(
                    t["maintenance_type"].removeprefix("MAINTENANCE_TYPE_")
                    for t in details["technique_information"] if t.get("is_chosen"))
        return chosen


def rounds(sides: Sides, raw: Path, rows: int, runs: int) -> tuple[Comparison, list[dict[str, str]]]:
    """``runs`` rounds of 1 % new input, then one update of each side (order flipped every round)."""
    step = max(1, rows // 100)
    result = Comparison(f"bench_mv_peer: an update after 1 % new input, {rows:,} rows, four views")
    chosen: list[dict[str, str]] = []
    for i in range(runs):
        append_rows(raw, rows + i * step, step, step)
        order = [("framework", sides.framework), ("peer", sides.peer)]
        for label, fn in order if i % 2 == 0 else reversed(order):
            seconds = timed(partial(fn, i))
            (result.framework_s if label == "framework" else result.baseline_s).append(seconds)
            print(f"  round {i + 1}/{runs}: {label} {seconds:.2f}s", file=sys.stderr, flush=True)
        chosen.append(sides.techniques())
    return result, chosen


def same_rows(sides: Sides) -> dict[str, int]:
    """Each view's rows, the same on both sides (else SystemExit naming the view)."""
    from framework.runner.session import get_or_create_session

    spark = get_or_create_session()
    counts: dict[str, int] = {}
    for view in VIEWS:
        ours = spark.read.format("delta").load(str(sides.storage / "tables" / view))
        peer = spark.read.format("delta").load(str(_peer_table(sides.warehouse, view)))
        if ours.exceptAll(peer).count() or peer.exceptAll(ours).count():
            raise SystemExit(f"the view {view} differs between the framework and spark-pipelines")
        counts[view] = ours.count()
    return counts


def _peer_table(warehouse: Path, view: str) -> Path:
    found = [p.parent for p in warehouse.rglob("_delta_log") if p.parent.name == view]
    if not found:
        raise SystemExit(f"spark-pipelines wrote no table {view} under {warehouse}")
    return found[0]


def main() -> int:
    parser = common_args(__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--rows", type=int, default=None, help="input rows (default 10,000,000 x scale)")
    args = parser.parse_args()
    rows = args.rows or int(10_000_000 * args.scale)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_mv_peer_"))
    for name in ("raw", "dim", "fw_storage", "sdp_project", "sdp_storage", "sdp_warehouse", "pipeline"):
        shutil.rmtree(work / name, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    raw, dim = work / "raw", work / "dim"
    append_rows(raw, 0, rows, max(1, rows // 100), mode="overwrite")
    write_dim(dim)
    sides = Sides(work, {"bench.raw": str(raw), "bench.dim": str(dim)})
    load_before = os.getloadavg()
    print(f"load before: {load_before}", file=sys.stderr, flush=True)
    for label, fn in (("framework", sides.framework), ("peer", sides.peer)):
        print(f"  initial update ({label}, {rows:,} rows): {timed(partial(fn, -1)):.1f}s (not counted)",
              file=sys.stderr, flush=True)
    result, chosen = rounds(sides, raw, rows, args.runs)
    result.extra["load average before / after"] = f"{load_before} / {os.getloadavg()}"
    result.extra["framework's techniques per round"] = chosen
    result.extra["rows per view (the same on both sides)"] = same_rows(sides)
    result.extra["compared"] = ("same pipeline file and input, one fresh process per update on each side "
                                "(JVM start included), each side's storage kept across rounds")
    print(result.report(), flush=True)
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

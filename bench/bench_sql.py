"""SQL pipelines (issue 17): the same pipeline in DLT SQL and with the Python API, and validating a large SQL file.

1. ``sql_vs_python``: ``bench/runner_pipelines/sql_vs_py/sql/pipeline.sql`` against ``.../py/pipeline.py`` (Auto
   Loader JSON bronze with a fixed schema → silver with two drop rules and a warn rule → a materialized
   aggregate), each a full update from empty storage on the same generated JSON files (1,000,000 rows in 100
   files at scale 1, the P1 data of ``bench_runner``), alternating in one warm session, medians of ``--runs``.
   The metrics of both sides are compared (rows, drops, per-rule failures). Ratio SQL / Python, limit 1.05.
2. ``validate_50``: loading and analysing a generated 50-statement SQL pipeline (``resolve_pipeline``: every
   query parsed and analysed by Spark, no data read) on the warm session; median of ``--runs``, limit 2 s.

Run: ``.venv/bin/python -m bench.bench_sql [--scale X] [--runs N]``.
"""

from __future__ import annotations

import io
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_runner import generate_orders
from bench.harness import alternate, common_args, timed, write_json

REPO = Path(__file__).resolve().parent.parent
PIPELINES = REPO / "bench" / "runner_pipelines" / "sql_vs_py"


def spec_for(kind: str, storage: Path, landing: Path) -> Any:
    from framework.spec import parse_spec

    return parse_spec({"name": f"bench_{kind}", "libraries": [{"glob": {"include": str(PIPELINES / kind / "*")}}],
                       "storage": str(storage), "schema": f"bench_{kind}",
                       "configuration": {"bench.landing": str(landing)}}, source="bench", default_root=REPO)


def run(spark: Any, kind: str, work: Path, landing: Path, metrics: dict[str, object]) -> None:
    from framework.runner.update import UpdateOptions, run_update

    storage = work / f"storage_{kind}"
    shutil.rmtree(storage, ignore_errors=True)
    result = run_update(spec_for(kind, storage, landing), UpdateOptions(out=io.StringIO()), spark=spark)
    if not result.succeeded:
        raise RuntimeError(f"{kind} update failed: {result.error or [f.error for f in result.flows]}")
    silver = result.flow("orders_silver")
    metrics[kind] = {"bronze": result.flow("orders_bronze").num_output_rows, "silver": silver.num_output_rows,
                     "dropped": silver.dropped_records,
                     "failed": {e.name: e.failed_records for e in silver.expectations},
                     "gold": result.flow("revenue_by_day_country").num_output_rows}


def fifty_statements(folder: Path, landing: Path) -> Path:
    """A SQL pipeline of 50 statements: a bronze streaming table, 24 silver streaming tables with expectations,
    25 materialized views over them."""
    lines = ["CREATE OR REFRESH STREAMING TABLE raw AS SELECT * FROM STREAM read_files("
             f"'{landing}', format => 'json', schema => 'order_id BIGINT, amount DOUBLE, qty INT, country STRING');"]
    for i in range(24):
        lines.append(f"CREATE OR REFRESH STREAMING TABLE s{i} (CONSTRAINT pos{i} EXPECT (amount > {i}) "
                     f"ON VIOLATION DROP ROW) AS SELECT order_id, amount * {i + 1} AS amount, qty, country "
                     "FROM STREAM(LIVE.raw) WHERE qty > 0;")
    for i in range(25):
        source = f"s{i % 24}"
        lines.append(f"CREATE OR REFRESH MATERIALIZED VIEW m{i} AS SELECT country, sum(amount) AS total, "
                     f"count(*) AS n FROM LIVE.{source} GROUP BY country;")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fifty.sql").write_text("\n\n".join(lines) + "\n")
    return folder


def validate_50(spark: Any, work: Path, landing: Path, runs: int) -> list[float]:
    from framework.runner.update import resolve_pipeline
    from framework.spec import parse_spec

    folder = fifty_statements(work / "fifty", landing)
    spec = parse_spec({"name": "fifty", "libraries": [{"glob": {"include": str(folder / "*")}}],
                       "storage": str(work / "fifty_storage"), "schema": "fifty"}, source="bench",
                      default_root=REPO)
    graph_size = len(resolve_pipeline(spec, spark)[1].graph.registry.flows)  # warm-up, and a check
    assert graph_size == 50, graph_size
    return [timed(lambda: resolve_pipeline(spec, spark)) for _ in range(runs)]


def main() -> None:
    parser = common_args(__doc__ or "")
    args = parser.parse_args()
    from framework.runner.session import get_or_create_session

    t0 = time.perf_counter()
    spark = get_or_create_session()
    print(f"session started in {time.perf_counter() - t0:.1f}s; load average {os.getloadavg()}", flush=True)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_sql_"))
    rows = int(1_000_000 * args.scale)
    landing = generate_orders(spark, work / "landing", rows, max(1, int(100 * args.scale)))
    metrics: dict[str, object] = {}
    comparison = alternate("sql_vs_python", lambda i: run(spark, "sql", work, landing, metrics),
                           lambda i: run(spark, "py", work, landing, metrics), runs=args.runs, warmup=True)
    if metrics["sql"] != metrics["py"]:
        raise SystemExit(f"the two pipelines disagree: {metrics}")
    comparison.extra = {"rows": rows, "metrics (both)": metrics["sql"]}
    times = validate_50(spark, work, landing, args.runs)
    print(f"[validate_50] runs: {', '.join(f'{t:.2f}s' for t in times)}; median {statistics.median(times):.2f}s "
          f"(limit 2.00 s: {'OK' if statistics.median(times) <= 2.0 else 'OVER'})", flush=True)
    print(f"load average after the runs {os.getloadavg()}", flush=True)
    write_json(args.json, comparison)
    print(comparison.report(limit=1.05), flush=True)


if __name__ == "__main__":
    main()

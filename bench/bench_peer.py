"""Peer comparison (issue 3): the framework vs open-source Spark Declarative Pipelines (``spark-pipelines run``).

What is compared: the *same* pipeline file, ``bench/runner_pipelines/peer/bronze.py`` (``from pyspark import
pipelines as dp``: a streaming table over JSON files with a fixed schema, a streaming table that filters and derives
columns, a materialized aggregate; no expectations, which SDP does not have), on the same generated JSON files
(1,000,000 rows in 100 files at scale 1, the P1 data of ``bench_runner``), run as one fresh process per update from
empty storage on both sides, with the same Spark settings (``conf/spark.yaml``) and Delta Lake as the table format:

* framework: ``python -m framework.cli run SPEC --storage TMP --no-report`` (in the project's virtualenv);
* peer: ``spark-pipelines run --spec spark-pipeline.yml`` from pyspark's own CLI, installed by this script in a
  separate virtualenv (``.cache/bench-sdp-venv``: ``pyspark[connect]==<the project's pyspark version>``). It starts a
  local Spark Connect server; the Delta jars (``.cache/jars``), Delta's extension/catalog and the rest of
  ``conf/spark.yaml`` go in a ``spark-defaults.conf`` (``SPARK_CONF_DIR``, see ``write_sdp_project``), and
  ``spark.sql.sources.default=delta`` makes its tables Delta.

Wall times alternate between the two sides (``--runs`` each, medians); the ratio framework / spark-pipelines is
printed last. Both sides' output tables are read back and compared (row counts of the three tables).

With ``--warm`` the framework's side goes through a warm ``medallion serve`` (issue 21: started once in the work
folder, ``--warmup`` untimed updates first; each timed run is still a fresh CLI process and empty storage); the
peer has no warm mode and runs as above.

Run: ``.venv/bin/python -m bench.bench_peer [--scale X] [--runs N] [--warm]``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.harness import common_args, write_json

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".cache" / "bench-sdp-venv"
PIPELINE_FILE = REPO / "bench" / "runner_pipelines" / "peer" / "bronze.py"
TABLES = ("orders_bronze", "orders_silver", "revenue_by_day_country")


def ensure_sdp_venv() -> Path:
    """Create the separate virtualenv with pyspark's ``spark-pipelines`` (once; a marker file skips it later)."""
    import pyspark

    version = pyspark.__version__
    marker = VENV / f".installed-pyspark-{version}"
    if marker.exists():
        return VENV
    print(f"creating {VENV} with pyspark[connect]=={version} (once)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
    subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", f"pyspark[connect]=={version}",
                    "pandas<3", "pyyaml"], check=True)
    marker.write_text(version)
    return VENV


def sdp_env(venv: Path, conf_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SPARK_HOME", None)
    env.update({"PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", "VIRTUAL_ENV": str(venv),
                "PYSPARK_PYTHON": str(venv / "bin" / "python"),
                "PYSPARK_DRIVER_PYTHON": str(venv / "bin" / "python"), "SPARK_LOCAL_IP": "127.0.0.1",
                "SPARK_CONF_DIR": str(conf_dir)})
    return env


def spark_conf() -> dict[str, str]:
    from framework.settings import load_local_settings

    settings = load_local_settings()
    conf = {k: str(v) for k, v in settings.spark_conf.items()}
    conf["spark.jars"] = ",".join(str(p) for p in settings.jar_paths())
    # The peer runs without the framework's jar, so with Delta's own LocalLogStore for file: paths (as both sides
    # did before the framework shipped medallion.storage.AtomicLocalLogStore); naming ours would fail its first
    # commit with ClassNotFoundException.
    conf["spark.delta.logStore.file.impl"] = "io.delta.storage.LocalLogStore"
    return conf


def write_sdp_project(project: Path, landing: Path, storage: Path, warehouse: Path,
                      pipeline_file: Path = PIPELINE_FILE, name: str = "bench_peer",
                      configuration: dict[str, str] | None = None) -> Path:
    """The SDP project folder: the pipeline file, ``spark-pipeline.yml`` and ``conf/spark-defaults.conf``.

    Static settings (``spark.jars``, the Delta extension and catalog, ...) cannot go in the spec's
    ``configuration`` (SDP also applies it to every flow: ``CANNOT_MODIFY_CONFIG``), nor on the
    ``spark-pipelines`` command line (the CLI's own Spark Connect server is started by a second spark-submit that
    does not see them): they go in a ``spark-defaults.conf`` found through ``SPARK_CONF_DIR``.
    """
    (project / "transformations").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(pipeline_file, project / "transformations" / pipeline_file.name)
    conf = {**spark_conf(), "spark.sql.warehouse.dir": str(warehouse), "spark.sql.sources.default": "delta"}
    for key in ("spark.app.name", "spark.master"):  # the CLI sets --remote; a master next to it is refused
        conf.pop(key, None)
    (project / "conf").mkdir(exist_ok=True)
    (project / "conf" / "spark-defaults.conf").write_text("".join(f"{k} {v}\n" for k, v in conf.items()))
    spec = {"name": name, "storage": storage.as_uri(),
            "libraries": [{"glob": {"include": "transformations/**"}}],
            "configuration": {"bench.landing": str(landing), **(configuration or {})}}
    path = project / "spark-pipeline.yml"
    path.write_text(yaml.safe_dump(spec))
    return path


def write_framework_spec(folder: Path, landing: Path, pipeline_dir: Path = PIPELINE_FILE.parent,
                         name: str = "bench_peer") -> Path:
    spec = {"name": name, "root": str(REPO), "schema": name,
            "libraries": [{"glob": {"include": f"{pipeline_dir.relative_to(REPO).as_posix()}/**"}}],
            "configuration": {"bench.landing": str(landing)}}
    path = folder / "framework-pipeline.yml"
    path.write_text(yaml.safe_dump(spec))
    return path


def run_process(cmd: list[str], cwd: Path, env: dict[str, str] | None, log: Path) -> float:
    start = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode} (log {log}):\n{tail}")
    return elapsed


def sdp_phases(log: Path) -> str:
    """The SDP CLI's own timestamps: JVM + server start, graph registration, the run itself."""
    stamps = re.findall(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d): (Loading pipeline spec|Creating Spark session|"
                        r"Creating dataflow graph|Registering graph elements|Starting run)",
                        log.read_text(errors="replace"), flags=re.M)
    return ", ".join(f"{what} at {when[11:]}" for when, what in stamps)


def main() -> None:
    parser = common_args(__doc__ or "")
    parser.add_argument("--warm", action="store_true",
                        help="run the framework side through a warm `medallion serve` (issue 21)")
    parser.add_argument("--warmup", type=int, default=3, help="with --warm: untimed updates through it first")
    args = parser.parse_args()
    from bench.bench_runner import FILES, ROWS_PER_FILE, generate_orders, json_files

    venv = ensure_sdp_venv()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_peer_"))
    work.mkdir(parents=True, exist_ok=True)
    files = max(2, int(FILES * args.scale))
    rows = files * ROWS_PER_FILE
    landing = work / "data" / "landing"
    if not (landing / "_COMPLETE").exists():
        from framework.runner.session import get_or_create_session

        spark = get_or_create_session()
        generate_orders(spark, landing, rows, files)
        spark.stop()  # the benchmark itself must not hold a JVM while the two sides run
    print(f"data: {rows} rows in {len(json_files(landing))} JSON files in {landing}; "
          f"load average {os.getloadavg()}", flush=True)
    fw_spec = write_framework_spec(work, landing)
    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    out_dirs: dict[str, Path] = {}

    def framework(i: int) -> None:
        storage = work / "fw_storage"
        shutil.rmtree(storage, ignore_errors=True)
        out_dirs["framework"] = storage / "tables"
        if args.warm:  # the CLI process forwards the command to the server started below
            from bench.bench_serve import cli

            cli(work, "run", str(fw_spec), "--storage", str(storage), "--no-report")
            return
        run_process([sys.executable, "-m", "framework.cli", "run", str(fw_spec), "--storage", str(storage),
                     "--no-report"], REPO, None, logs / f"framework-{i}.log")

    def peer(i: int) -> None:
        project, storage, warehouse = work / "sdp_project", work / "sdp_storage", work / "sdp_warehouse"
        for path in (project, storage, warehouse, project / "metastore_db", project / "spark-warehouse"):
            shutil.rmtree(path, ignore_errors=True)
        spec = write_sdp_project(project, landing, storage, warehouse)
        out_dirs["spark-pipelines"] = warehouse
        log = logs / f"sdp-{i}.log"
        run_process([str(venv / "bin" / "spark-pipelines"), "run", "--spec", str(spec)], project,
                    sdp_env(venv, project / "conf"), log)
        print(f"    spark-pipelines phases: {sdp_phases(log)}", file=sys.stderr, flush=True)

    load_before = os.getloadavg()
    cmp_ = _compare(args, work, framework, peer)
    cmp_.extra["load average before / after"] = f"{load_before} / {os.getloadavg()}"
    counts = check_outputs(out_dirs)
    cmp_.extra["rows per table (framework, spark-pipelines)"] = counts
    cmp_.extra["compared"] = ("same pipeline file, same data, one fresh process per update from empty storage, "
                              "both writing Delta; framework without its HTML report (--no-report)")
    print(cmp_.report(), flush=True)
    write_json(args.json, cmp_)


def _compare(args: Any, work: Path, framework: Any, peer: Any) -> Any:
    """The alternating runs; with ``--warm``, the framework's through a server started (and stopped) here."""
    from bench.harness import alternate

    if not args.warm:
        return alternate("peer: framework CLI / spark-pipelines run", framework, peer, args.runs)
    from bench.bench_serve import cli

    cli(work, "serve", "--idle-timeout", "1800")
    try:
        for i in range(args.warmup):
            framework(-1 - i)
        return alternate("peer: framework CLI through a warm `medallion serve` / spark-pipelines run", framework,
                         peer, args.runs)
    finally:
        cli(work, "serve", "--stop")


def check_outputs(out_dirs: dict[str, Path]) -> dict[str, Any]:
    from framework.runner.session import get_or_create_session

    spark = get_or_create_session()
    counts: dict[str, Any] = {}
    for table in TABLES:
        pair = []
        for side in ("framework", "spark-pipelines"):
            folder = out_dirs.get(side)
            path = folder / table if folder is not None else None
            pair.append(spark.read.format("delta").load(str(path)).count()
                        if path is not None and (path / "_delta_log").exists() else None)
        counts[table] = tuple(pair)
    mismatched = {t: c for t, c in counts.items() if c[0] != c[1]}
    if mismatched:
        raise AssertionError(f"the two sides wrote different row counts: {mismatched}")
    return counts


if __name__ == "__main__":
    main()

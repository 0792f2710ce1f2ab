"""P6 developer loop (issue 3): how long a developer waits for an update of the sample pipeline.

* warm: the SparkSession is already started (as in a notebook, a REPL or ``medallion watch``); after one untimed
  warm-up update, ``--runs`` updates from empty storage on the sample data (batch 1 of
  ``framework.sample_data``: 1,000 orders + 40 customer changes), then ``--runs`` incremental updates, each after a
  new batch has landed. Limit: the median warm update from empty storage <= 5 s.
* cold: a fresh process, ``python -m framework.cli run SPEC --storage TMP`` (wall time, including the JVM start,
  the update and the data-quality report the command writes by default), ``--runs`` times. SPEC is a copy of
  ``conf/sample.yaml`` whose ``dbfs:/mnt/landing`` mapping points at the generated data (the sample spec maps it into
  ``runs/sample/landing``, which ``make demo`` owns). Also reported: CPU seconds of the machine (``/proc/stat``)
  and of the driver JVM (sampled until it exits), and with ``--cold-compare`` the same runs, alternating, with the
  JVM's stock start (no class-data sharing archive, no small-command JIT options) and with a bare PySpark + Delta
process that writes one row (``bench/bare_delta_floor.py``); the ratio of the sample's cold run to that floor is
printed (issue 35: <= 0.6). ``--against REV`` adds, alternating, cold runs of the CLI at an earlier commit (a
worktree with its own framework jar and class-data sharing archive, ``bench/against.py``) and its ratio to the same
floor: what a change did to the cold run, measured in one run. Limit: the median <= 20 s.

``--pipeline p1-small`` runs the same measurements on an equivalent small pipeline without Auto Loader and APPLY
CHANGES (``bench/runner_pipelines/p1``: JSON files -> streaming table -> streaming table with expectations ->
materialized view, 1,000 rows in 4 files), for when those parts of the framework are not available.

Run: ``.venv/bin/python -m bench.bench_devloop [--runs N] [--pipeline sample|p1-small] [--skip-cold]
[--cold-compare] [--against REV]``.
"""

from __future__ import annotations

import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench import against
from bench.harness import common_args

LIMIT_S = 5.0
REPO = Path(__file__).resolve().parent.parent


def land_batch(pipeline: str, spark: Any, landing: Path, batch: int) -> None:
    if pipeline == "sample":
        from framework.sample_data import write_customer_changes, write_orders

        write_orders(landing / "orders", batch)
        write_customer_changes(landing / "customers", batch)
    else:
        from bench.bench_runner import generate_orders

        generate_orders(spark, landing / f"batch{batch}", 1000, 4, first_id=batch * 1000)


def spec_dict(pipeline: str, storage: Path, landing: Path) -> dict[str, Any]:
    if pipeline == "sample":
        raw = yaml.safe_load((REPO / "conf" / "sample.yaml").read_text())
        raw.pop("environments", None)
        raw.update({"root": str(REPO), "storage": str(storage), "paths": {"dbfs:/mnt/landing": str(landing)}})
        return dict(raw)
    return {"name": "bench_devloop", "root": str(REPO), "schema": "bench_devloop", "storage": str(storage),
            "libraries": [{"glob": {"include": "bench/runner_pipelines/p1/**"}}],
            "configuration": {"landing": f"{landing}/*"}}


class CpuClock:
    """CPU seconds used by this process and the session's JVM (Linux: /proc), and the share of the host's CPU
    time the hypervisor stole. Wall time on a shared VM moves with the neighbours; CPU time much less, so the
    warm figures are reported both ways."""

    def __init__(self, spark: Any) -> None:
        self.jvm_stat: Path | None = None
        try:
            pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
            stat = Path(f"/proc/{pid}/stat")
            self.jvm_stat = stat if stat.exists() else None
        except Exception:
            self.jvm_stat = None

    def seconds(self) -> float | None:
        if self.jvm_stat is None:
            return None
        fields = self.jvm_stat.read_text().rsplit(")", 1)[1].split()
        jvm = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        own = os.times()
        return jvm + own.user + own.system

    @staticmethod
    def host() -> list[int] | None:
        stat = Path("/proc/stat")
        return [int(v) for v in stat.read_text().split("\n", 1)[0].split()[1:]] if stat.exists() else None


def warm(pipeline: str, spark: Any, work: Path, runs: int) -> dict[str, Any]:
    from framework.runner.update import UpdateOptions, run_update
    from framework.spec import parse_spec

    landing, storage = work / "landing", work / "warm_storage"
    shutil.rmtree(landing, ignore_errors=True)
    land_batch(pipeline, spark, landing, 1)
    spec = parse_spec(spec_dict(pipeline, storage, landing), source="bench", default_root=REPO)

    def update() -> Any:
        result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
        if not result.succeeded:
            raise RuntimeError(f"update failed: {result.error or [(f.flow, f.error) for f in result.flows]}")
        return result

    shutil.rmtree(storage, ignore_errors=True)
    start = time.perf_counter()
    update()
    warmup = time.perf_counter() - start
    print(f"  warm-up update (first in this session): {warmup:.2f}s", file=sys.stderr, flush=True)
    fresh: list[float] = []
    cpu: list[float] = []
    results = []
    clock = CpuClock(spark)
    host_before = clock.host()
    for i in range(runs):
        shutil.rmtree(storage, ignore_errors=True)
        cpu_start = clock.seconds()
        start = time.perf_counter()
        results.append(update())
        fresh.append(time.perf_counter() - start)
        cpu_end = clock.seconds()
        used = cpu_end - cpu_start if cpu_start is not None and cpu_end is not None else None
        if used is not None:
            cpu.append(used)
        print(f"  warm update from empty storage {i + 1}/{runs}: {fresh[-1]:.2f}s"
              + (f" ({used:.2f} CPU s)" if used is not None else ""), file=sys.stderr, flush=True)
    host_after = clock.host()
    steal = None
    if host_before is not None and host_after is not None and len(host_before) > 7:
        delta = [b - a for a, b in zip(host_before, host_after, strict=True)]
        steal = 100.0 * delta[7] / max(1, sum(delta))
    incremental: list[float] = []
    for i in range(runs):
        land_batch(pipeline, spark, landing, 2 + i)
        start = time.perf_counter()
        update()
        incremental.append(time.perf_counter() - start)
        print(f"  warm incremental update {i + 1}/{runs} (batch {2 + i}): {incremental[-1]:.2f}s",
              file=sys.stderr, flush=True)
    start = time.perf_counter()
    update()
    noop = time.perf_counter() - start
    last = results[-1]
    per_flow = {f.flow: round(f.seconds, 2) for f in last.flows}
    return {"warm-up": warmup, "fresh": fresh, "cpu": cpu, "steal": steal, "incremental": incremental,
            "noop": noop, "per_flow": per_flow,
            "flow_sum": round(sum(f.seconds for f in last.flows), 2), "wall": round(last.seconds, 2),
            "flows": len(last.flows)}


@dataclass
class ColdRun:
    """One cold CLI run: wall time, and CPU seconds of the machine (all cores, from ``/proc/stat``), of the
    driver JVM (its last sample before it exited) and of the CLI's Python process."""

    wall: float
    machine_cpu: float | None
    jvm_cpu: float | None
    python_cpu: float


def _busy_seconds() -> float | None:
    fields = CpuClock.host()
    if fields is None:
        return None
    idle = fields[3] + fields[4] + (fields[7] if len(fields) > 7 else 0)  # idle, iowait, steal
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _child_java_cpu(parent: int) -> float | None:
    """CPU seconds of the ``java`` child of ``parent`` (spark-submit execs the JVM in place), or None."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            name, fields = stat.read_text().rsplit(")", 1)
        except OSError:
            continue
        values = fields.split()
        if name.endswith("(java") and int(values[1]) == parent:
            return (int(values[11]) + int(values[12])) / os.sysconf("SC_CLK_TCK")
    return None


def timed_cli(cmd: list[str], env: dict[str, str], cwd: Path = REPO
              ) -> tuple[ColdRun, subprocess.CompletedProcess[str]]:
    """Run ``cmd`` (a CLI process that starts its own JVM) in ``cwd`` and measure it as :class:`ColdRun`."""
    before = os.times()
    busy = _busy_seconds()
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    jvm: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            seconds = _child_java_cpu(proc.pid)
            if seconds is not None:
                jvm.append(seconds)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    after = os.times()
    busy_after = _busy_seconds()
    run = ColdRun(wall, None if busy is None or busy_after is None else busy_after - busy, max(jvm, default=None),
                  after.children_user + after.children_system - before.children_user - before.children_system)
    return run, subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def cold(pipeline: str, work: Path, runs: int, variants: dict[str, dict[str, str]],
         checkouts: dict[str, Path] | None = None) -> dict[str, list[ColdRun]]:
    """``runs`` cold CLI runs per variant (extra environment variables), alternating; a variant named in
    ``checkouts`` runs the CLI of that checkout (``--against``)."""
    landing = work / "cold_landing"
    shutil.rmtree(landing, ignore_errors=True)
    land_batch(pipeline, None, landing, 1)
    spec_path = work / "sample.yaml"
    spec_path.write_text(yaml.safe_dump(spec_dict(pipeline, work / "unused", landing)))
    results: dict[str, list[ColdRun]] = {name: [] for name in variants}
    for i in range(runs):
        for name, extra in variants.items():
            storage = work / f"cold_storage_{name}_{i}"
            shutil.rmtree(storage, ignore_errors=True)
            cmd = ([sys.executable, "-m", "bench.bare_delta_floor", str(storage / "t")] if name == BARE
                   else [sys.executable, "-m", "framework.cli", "run", str(spec_path), "--storage", str(storage)])
            run, proc = timed_cli(cmd, {**os.environ, "MEDALLION_NO_SERVER": "1", **extra},
                                  (checkouts or {}).get(name, REPO))
            if proc.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n"
                                   f"{proc.stderr[-3000:]}")
            results[name].append(run)
            print(f"  cold run {i + 1}/{runs} ({name}): {run.wall:.2f}s, JVM CPU {run.jvm_cpu}s, machine CPU "
                  f"{run.machine_cpu}s", file=sys.stderr, flush=True)
    return results


def cold_lines(results: dict[str, list[ColdRun]]) -> list[str]:
    lines = []
    for name, runs in results.items():
        walls = [r.wall for r in runs]
        jvm = [r.jvm_cpu for r in runs if r.jvm_cpu is not None]
        machine = [r.machine_cpu for r in runs if r.machine_cpu is not None]
        lines.append(f"[P6] cold runs, {name} (fresh process, CLI wall time): {', '.join(f'{t:.2f}s' for t in walls)}"
                     f"; median {statistics.median(walls):.2f}s")
        if jvm and machine:
            lines.append(f"[P6]   CPU seconds per cold run ({name}): machine {statistics.median(machine):.1f} "
                         f"(all {os.cpu_count()} cores), driver JVM {statistics.median(jvm):.1f} "
                         f"({statistics.median(jvm) / statistics.median(machine):.0%} of the machine's), CLI "
                         f"Python {statistics.median(r.python_cpu for r in runs):.1f} (medians)")
    return lines


BARE = "bare PySpark + Delta, one row"  # bench/bare_delta_floor.py: the floor of issue 35's cold ratio
COLD_VARIANTS = {
    "as configured": {},
    # the JVM's stock start: no class-data sharing archive, tiered C1+C2 whatever the input size
    "no archive, tiered JIT": {"MEDALLION_CDS": "0", "MEDALLION_SMALL_JAVA_OPTIONS": "0"},
    BARE: {},
}


def ratio_lines(cold_runs: dict[str, list[ColdRun]], against_rev: str | None) -> list[str]:
    """Issue 35's ratio (the sample's cold run to the bare floor), and the same for ``--against``'s revision."""
    if BARE not in cold_runs:
        return []
    floor = statistics.median(r.wall for r in cold_runs[BARE])
    lines = []
    for name in ("as configured", *([against_rev] if against_rev else [])):
        ratio = statistics.median(r.wall for r in cold_runs[name]) / floor
        label = "" if name == "as configured" else f" at {name}"
        lines.append(f"[P6] cold sample run{label} / cold bare PySpark + Delta one-row process: {ratio:.2f} "
                     "(limit 0.6)")
    return lines


def main() -> None:
    parser = common_args(__doc__ or "")
    parser.add_argument("--pipeline", choices=("sample", "p1-small"), default="sample")
    parser.add_argument("--skip-cold", action="store_true")
    parser.add_argument("--cold-runs", type=int, default=None, help="cold runs (default: --runs)")
    parser.add_argument("--cold-compare", action="store_true",
                        help="alternate cold runs as configured with runs without the class-data sharing archive "
                             "and the small-command JIT options")
    parser.add_argument("--against", metavar="REV", default=None,
                        help="also alternate cold runs of the CLI at git revision REV (a worktree with its own "
                             "framework jar and class-data sharing archive), with its ratio to the floor")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_devloop_"))
    work.mkdir(parents=True, exist_ok=True)
    lines = [f"[P6] pipeline: {args.pipeline}; load average before: {os.getloadavg()}"]
    cold_runs: dict[str, list[ColdRun]] = {}
    if not args.skip_cold and args.pipeline == "sample":  # p1-small needs Spark to generate its data
        variants = dict(COLD_VARIANTS) if args.cold_compare else {"as configured": {}}
        checkouts = {args.against: against.prepare(args.against, work)} if args.against else {}
        variants.update({rev: {} for rev in checkouts})
        # first, so that no session of ours competes for CPU
        cold_runs = cold(args.pipeline, work, args.cold_runs or args.runs, variants, checkouts)
        for root in checkouts.values():
            against.remove(root)
    from framework.runner.session import get_or_create_session

    start = time.perf_counter()
    spark = get_or_create_session()
    session_s = time.perf_counter() - start
    w = warm(args.pipeline, spark, work, args.runs)
    lines += [f"[P6] session start (in process): {session_s:.2f}s",
              f"[P6] warm-up update (first of the session): {w['warm-up']:.2f}s",
              f"[P6] warm updates from empty storage: {', '.join(f'{t:.2f}s' for t in w['fresh'])}",
              *([f"[P6] CPU seconds (JVM + Python) per warm update from empty storage: "
                 f"{', '.join(f'{c:.2f}' for c in w['cpu'])}; median {statistics.median(w['cpu']):.2f} "
                 f"on {os.cpu_count()} cores; CPU time stolen by the host meanwhile: {w['steal']:.1f}%"]
                if w["cpu"] and w["steal"] is not None else []),
              f"[P6] warm incremental updates (new batch): {', '.join(f'{t:.2f}s' for t in w['incremental'])}",
              f"[P6] warm no-op update (nothing new): {w['noop']:.2f}s",
              f"[P6] last fresh update: {w['flows']} flows, per flow {w['per_flow']}, "
              f"sum of flow times {w['flow_sum']}s (up to 4 flows at a time) in {w['wall']}s"]
    lines += cold_lines(cold_runs)
    lines += ratio_lines(cold_runs, args.against)
    lines.append(f"[P6] load average after: {os.getloadavg()}")
    median = statistics.median(w["fresh"])
    lines.append(f"[P6] warm incremental median {statistics.median(w['incremental']):.2f}s")
    lines.append(f"[P6] warm update median {median:.2f}s (limit {LIMIT_S:.1f}s: {'OK' if median <= LIMIT_S else 'OVER'})")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()

"""Warm engine (issue 21): ``medallion run`` of the sample pipeline through ``medallion serve``, CLI process
included, for an incremental update; cold in-process runs of the same update for comparison.

The work folder is the "repository" (the server's socket lives in ``<work>/.medallion``); the spec is a copy of
``conf/sample.yaml`` whose landing folder and storage are in the work folder. Per run: a new batch of the sample
data lands (1,000 orders + customer changes), then, alternating, ``python -m framework.cli run SPEC --storage W``
through the warm server and ``MEDALLION_NO_SERVER=1 python -m framework.cli run SPEC --storage C`` in a fresh
process (JVM start included), each an incremental update of that batch. Both storages get their first update
through the server, untimed, and ``--warmup`` more incremental updates through it warm the server's JIT.
Limit: the median warm incremental run <= 3 s (wall time of the CLI process).

``--first`` measures instead the first command a new server gets (issue 39): per run, a new server is started
and left to finish its warm-up (``framework/serve/warmup.py``), then the sample's first update into empty
storage is timed through it, against the same update in a fresh process (``MEDALLION_NO_SERVER=1``); a command
sent the moment the server listens (it interrupts the warm-up) is timed too.

Run: ``.venv/bin/python -m bench.bench_serve [--runs N] [--warmup N] [--first] [--json FILE]``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bench.harness import common_args

LIMIT_S = 3.0
REPO = Path(__file__).resolve().parent.parent
UPDATE_TIMES: list[float] = []


def cli(work: Path, *args: str, in_process: bool = False) -> float:
    """Run ``medallion ARGS`` in a fresh process from ``work``; return its wall time (the update's own time,
    from its summary, is added to ``UPDATE_TIMES``)."""
    env = {k: v for k, v in os.environ.items() if k != "MEDALLION_NO_SERVER"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    if in_process:
        env["MEDALLION_NO_SERVER"] = "1"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "framework.cli", *args], cwd=work, env=env, capture_output=True,
                          text=True, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"medallion {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n"
                           f"{proc.stderr[-3000:]}")
    if not in_process and "medallion: " in proc.stderr:  # a fallback line: not through the server
        raise RuntimeError(f"medallion {' '.join(args)} did not run on the server:\n{proc.stderr[-2000:]}")
    found = re.search(r"COMPLETED in (\d+\.\d+)s", proc.stdout)
    if found:
        UPDATE_TIMES.append(float(found.group(1)))
    return seconds


def land(work: Path, batch: int) -> None:
    from framework.sample_data import write_customer_changes, write_orders

    write_orders(work / "landing" / "orders", batch)
    write_customer_changes(work / "landing" / "customers", batch)


def prepare(work: Path) -> None:
    """The work folder: the sample spec with its landing folder and storage inside."""
    shutil.rmtree(work / "landing", ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    raw = yaml.safe_load((REPO / "conf" / "sample.yaml").read_text())
    raw.pop("environments", None)
    raw.update({"root": str(REPO), "storage": str(work / "unused"),
                "paths": {"dbfs:/mnt/landing": str(work / "landing")}})
    (work / "sample.yaml").write_text(yaml.safe_dump(raw))


def warm_up_lines(work: Path) -> list[str]:
    """The warm-up lines of the servers' log so far (every server of the work folder appends to it)."""
    log = work / ".medallion" / "serve.log"
    return [line for line in log.read_text().splitlines() if "warm-up " in line] if log.exists() else []


def wait_for_warm_up(work: Path, seen: int, timeout: float = 600) -> str:
    """Wait until the server's log has a warm-up line after the ``seen`` first ones; return it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = warm_up_lines(work)
        if len(lines) > seen:
            return lines[-1]
        time.sleep(0.5)
    raise RuntimeError("the server did not finish its warm-up")


def first_commands(work: Path, runs: int) -> list[str]:
    """Per run: the first update through a new, warmed-up server; through a new server the moment it listens;
    in a fresh process. Each into empty storage."""
    land(work, 1)
    times: dict[str, list[float]] = {"warmed": [], "at once": [], "cold": []}
    warmed_line = ""
    for i in range(runs):
        for side in times:
            storage = str(work / f"first_{i}_{side.replace(' ', '_')}")
            if side == "cold":
                times[side].append(cli(work, "run", "sample.yaml", "--storage", storage, in_process=True))
                continue
            seen = len(warm_up_lines(work))
            cli(work, "serve", "--idle-timeout", "1800")
            try:
                if side == "warmed":
                    warmed_line = wait_for_warm_up(work, seen)
                times[side].append(cli(work, "run", "sample.yaml", "--storage", storage))
            finally:
                cli(work, "serve", "--stop")
        print(f"  run {i + 1}/{runs}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in times.items()),
              file=sys.stderr, flush=True)
    medians = {k: statistics.median(v) for k, v in times.items()}
    return [f"[serve --first] {k}: {', '.join(f'{t:.2f}s' for t in v)} (median {medians[k]:.2f}s)"
            for k, v in times.items()] + [
        f"[serve --first] last warm-up left alone: {warmed_line.partition('medallion serve: ')[2]}",
        f"[serve --first] first command after the warm-up / cold {medians['warmed'] / medians['cold']:.3f}; "
        f"sent the moment the server listens / cold {medians['at once'] / medians['cold']:.3f}"]


def main() -> None:
    parser = common_args(__doc__ or "")
    parser.add_argument("--warmup", type=int, default=3, help="untimed warm incremental updates first")
    parser.add_argument("--first", action="store_true", help="time the first command of new servers instead")
    args = parser.parse_args()
    work = (args.workdir or Path(tempfile.mkdtemp(prefix="bench_serve_"))).resolve()
    prepare(work)
    if args.first:
        lines = [f"[serve --first] load average before: {os.getloadavg()}", *first_commands(work, args.runs),
                 f"[serve --first] load average after: {os.getloadavg()}"]
        print("\n".join(lines), flush=True)
        return
    warm_storage, cold_storage = str(work / "warm_storage"), str(work / "cold_storage")
    for storage in (warm_storage, cold_storage):
        shutil.rmtree(storage, ignore_errors=True)
    lines = [f"[serve] load average before: {os.getloadavg()}"]
    server_s = cli(work, "serve", "--idle-timeout", "1800")
    lines.append(f"[serve] medallion serve (until listening, JVM started): {server_s:.2f}s")
    try:
        batch = 1
        land(work, batch)
        first = [cli(work, "run", "sample.yaml", "--storage", s) for s in (warm_storage, cold_storage)]
        lines.append(f"[serve] first updates through the server (empty storage): "
                     f"{', '.join(f'{t:.2f}s' for t in first)}")
        for _ in range(args.warmup):
            batch += 1
            land(work, batch)
            cli(work, "run", "sample.yaml", "--storage", warm_storage)
        warm, cold, warm_updates = [], [], []
        state = [cli(work, "state", "sample.yaml", "--storage", warm_storage, in_process=p) for p in (False, True)]
        for i in range(args.runs):
            batch += 1
            land(work, batch)
            warm.append(cli(work, "run", "sample.yaml", "--storage", warm_storage))
            warm_updates.append(UPDATE_TIMES[-1])
            cold.append(cli(work, "run", "sample.yaml", "--storage", cold_storage, in_process=True))
            print(f"  run {i + 1}/{args.runs}: warm {warm[-1]:.2f}s, cold {cold[-1]:.2f}s", file=sys.stderr,
                  flush=True)
    finally:
        cli(work, "serve", "--stop")
    median_warm, median_cold = statistics.median(warm), statistics.median(cold)
    lines += [f"[serve] warm incremental runs (CLI wall time): {', '.join(f'{t:.2f}s' for t in warm)}",
              f"[serve] the same warm updates as their summary times them (in the server): "
              f"{', '.join(f'{t:.2f}s' for t in warm_updates)}",
              f"[serve] `medallion state` (no Spark): {state[0]:.2f}s through the server, {state[1]:.2f}s in-process",
              f"[serve] cold incremental runs (fresh process, in-process): {', '.join(f'{t:.2f}s' for t in cold)}",
              f"[serve] load average after: {os.getloadavg()}",
              f"[serve] cold median {median_cold:.2f}s; warm / cold {median_warm / median_cold:.3f}",
              f"[serve] warm incremental median {median_warm:.2f}s (limit {LIMIT_S:.1f}s: "
              f"{'OK' if median_warm <= LIMIT_S else 'OVER'})"]
    print("\n".join(lines), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"server_start": server_s, "first": first, "warm": warm, "cold": cold,
                                         "warm_updates": warm_updates, "state": state,
                                         "warm_median": median_warm, "cold_median": median_cold}, indent=2))


if __name__ == "__main__":
    main()

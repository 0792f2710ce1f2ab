"""Benchmark: continuous mode on the sample pipeline (issue 20): latency, and a sustained run's throughput, memory
and state.

The sample pipeline (``conf/sample.yaml``) runs as a continuous update (``UpdateOptions(continuous=True)``) with
``pipelines.trigger.interval`` = ``--interval`` (default 1 second) for every flow, its landing folder and storage
in a temporary folder, after one batch of the sample data (``framework.sample_data``).

- ``latency``: ``--probes`` times, one order with an order date of its own is renamed into the landing folder;
  its latency is from the rename to the commit of the gold table (``daily_revenue_by_country``) whose version
  first holds that date's row (the commit file's modification time; the check reads that version afterwards).
  One probe at a time, two seconds apart. Reports the median and the 95th percentile; wanted: median ≤ 3 s at a
  1-second trigger.
- ``soak``: ``--minutes`` of steady arrival, one file of ``--rate`` orders every second. Every minute: the
  orders landed and the rows in the silver table, the driver JVM's heap in use after a full GC (the heap pools'
  usage after their last collection, ``System.gc()`` first), the JVM's and this
  Python process's resident memory, and the sizes of the checkpoints, the tables' Delta logs and the event log.
  Reports the first and last samples and the throughput over the run (rows that reached silver per second).

Run: ``.venv/bin/python -m bench.bench_continuous latency [--probes 20]`` or
``.venv/bin/python -m bench.bench_continuous soak --minutes 10 [--rate 100] [--json FILE]``
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from bench.bench_devloop import REPO, spec_dict
from framework.runner.session import get_or_create_session
from framework.runner.update import UpdateOptions, UpdateResult, run_update
from framework.spec import parse_spec

GOLD = "daily_revenue_by_country"
SILVER = "orders_clean"


class _Output(io.StringIO):
    """The update's console output, kept, with an event set once the continuous phase has started."""

    def __init__(self) -> None:
        super().__init__()
        self.continuous = threading.Event()

    def write(self, text: str) -> int:
        if "continuous: the flows keep running" in text:
            self.continuous.set()
        return super().write(text)


@dataclass
class ContinuousSample:
    """The sample pipeline running continuously in a background thread."""

    work: Path
    interval: str
    spark: Any = None
    stop: threading.Event = field(default_factory=threading.Event)
    out: _Output = field(default_factory=_Output)
    result: list[UpdateResult] = field(default_factory=list)
    thread: threading.Thread | None = None

    @property
    def landing(self) -> Path:
        return self.work / "landing"

    @property
    def storage(self) -> Path:
        return self.work / "storage"

    def start(self) -> None:
        from framework.sample_data import write_customer_changes, write_orders

        write_orders(self.landing / "orders", 1)
        write_customer_changes(self.landing / "customers", 1)
        raw = spec_dict("sample", self.storage, self.landing)
        raw["configuration"] = {**raw.get("configuration", {}), "pipelines.trigger.interval": self.interval,
                                "medallion.continuous.progressEventSeconds": "60"}
        spec = parse_spec(raw, source="bench_continuous", default_root=REPO)
        self.spark = get_or_create_session()
        options = UpdateOptions(continuous=True, stop=self.stop, out=self.out)
        self.thread = threading.Thread(target=lambda: self.result.append(run_update(spec, options, spark=self.spark)),
                                       daemon=True, name="bench-continuous")
        self.thread.start()
        if not self.out.continuous.wait(600):
            raise SystemExit(f"the continuous phase did not start:\n{self.out.getvalue()[-3000:]}")

    def finish(self) -> UpdateResult:
        self.stop.set()
        assert self.thread is not None
        self.thread.join(600)
        if not self.result or not self.result[0].succeeded:
            raise SystemExit(f"the continuous update failed:\n{self.out.getvalue()[-3000:]}")
        return self.result[0]

    def table(self, name: str) -> Path:
        return self.storage / "tables" / name


def land(folder: Path, name: str, records: list[dict[str, Any]]) -> float:
    """Write ``records`` as JSON lines beside ``folder`` and rename the file into it; the time of the rename."""
    folder.mkdir(parents=True, exist_ok=True)
    staging = folder.parent / f".{name}"
    staging.write_text("".join(json.dumps(r) + "\n" for r in records))
    os.rename(staging, folder / name)
    return time.time()


def _commits(table: Path) -> dict[int, float]:
    log = table / "_delta_log"
    out = {}
    for entry in os.scandir(log) if log.is_dir() else ():
        if entry.name.endswith(".json") and entry.name[:20].isdigit():
            out[int(entry.name[:20])] = entry.stat().st_mtime
    return out


def _probe(sample: ContinuousSample, k: int, timeout: float = 120.0) -> float:
    """One latency probe: seconds from landing an order of a date of its own to the gold commit holding it."""
    day = date(2031, 1, 1) + timedelta(days=k)
    seen = set(_commits(sample.table(GOLD)))
    landed = land(sample.landing / "orders", f"probe-{k:04d}.json", [{
        "order_id": 50_000_000 + k, "customer_id": 1, "amount": 10.0, "currency": "EUR",
        "order_ts": f"{day.isoformat()}T12:00:00", "status": "completed"}])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for version, mtime in sorted(_commits(sample.table(GOLD)).items()):
            if version in seen:
                continue
            seen.add(version)
            df = sample.spark.read.format("delta").option("versionAsOf", version).load(str(sample.table(GOLD)))
            if df.where(f"order_date = DATE'{day.isoformat()}'").limit(1).count():
                stages = {name: min((t for t in _commits(sample.table(name)).values() if t >= landed), default=None)
                          for name in ("orders_raw", SILVER)}
                print("    stages: " + ", ".join(f"{n} {t - landed:.2f}s" for n, t in stages.items() if t),
                      file=sys.stderr)
                return mtime - landed
        time.sleep(0.05)
    raise SystemExit(f"probe {k}: no gold row after {timeout:.0f}s")


def latency(work: Path, probes: int, interval: str) -> dict[str, Any]:
    sample = ContinuousSample(work, interval)
    sample.start()
    seconds = []
    try:
        for k in range(probes):
            seconds.append(_probe(sample, k))
            print(f"  probe {k + 1}/{probes}: {seconds[-1]:.2f}s", file=sys.stderr, flush=True)
            time.sleep(2.0)
    finally:
        sample.finish()
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"probes": seconds, "median_s": statistics.median(seconds), "p95_s": p95}


def _size(path: Path, pattern: str = "**/*") -> int:
    return sum(p.stat().st_size for p in path.glob(pattern) if p.is_file()) if path.exists() else 0


def _rss_kib(pid: int | str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _sample(sample: ContinuousSample, started: float, landed: int) -> dict[str, Any]:
    jvm = sample.spark.sparkContext._jvm
    jvm.java.lang.System.gc()
    pools = jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
    after_gc = sum(p.getCollectionUsage().getUsed() for p in pools
                   if p.getType().name() == "HEAP" and p.getCollectionUsage() is not None)
    silver = sample.spark.read.format("delta").load(str(sample.table(SILVER))).count()
    storage = sample.storage
    return {
        "minute": round((time.monotonic() - started) / 60, 1), "orders_landed": landed, "silver_rows": silver,
        "jvm_heap_after_gc_mib": round(after_gc / 2**20, 1),
        "jvm_rss_mib": round(_rss_kib(jvm.java.lang.ProcessHandle.current().pid()) / 1024, 1),
        "python_rss_mib": round(_rss_kib("self") / 1024, 1),
        "checkpoints_mib": round(_size(storage / "checkpoints") / 2**20, 2),
        "delta_logs_mib": round(_size(storage / "tables", "*/_delta_log/*") / 2**20, 2),
        "event_log_mib": round(_size(storage / "system" / "events") / 2**20, 2),
        "load_average": os.getloadavg()[0],
    }


def _orders(second: int, rate: int) -> list[dict[str, Any]]:
    first = 10_000_000 + second * rate
    return [{"order_id": first + i, "customer_id": 1 + (first + i) % 40, "amount": 5.0 + (first + i) % 100,
             "currency": "EUR", "order_ts": f"2030-06-01T{(second // 60) % 24:02d}:{second % 60:02d}:00",
             "status": "completed"} for i in range(rate)]


def soak(work: Path, minutes: float, rate: int, interval: str, report: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    sample = ContinuousSample(work, interval)
    sample.start()
    started = time.monotonic()
    samples = [_sample(sample, started, 0)]
    report(samples[-1])
    landed, second, next_sample = 0, 0, started + 60
    try:
        while time.monotonic() - started < minutes * 60:
            land(sample.landing / "orders", f"soak-{second:06d}.json", _orders(second, rate))
            landed += rate
            second += 1
            if time.monotonic() >= next_sample:
                samples.append(_sample(sample, started, landed))
                report(samples[-1])
                next_sample += 60
            time.sleep(max(0.0, started + second - time.monotonic()))
        deadline = time.monotonic() + 300  # let the pipeline catch up with the last files
        base = samples[0]["silver_rows"]
        while _silver(sample) < base + landed and time.monotonic() < deadline:
            time.sleep(1)
        caught_up = time.monotonic() - started
        samples.append(_sample(sample, started, landed))
        report(samples[-1])
    finally:
        sample.finish()
    moved = samples[-1]["silver_rows"] - samples[0]["silver_rows"]
    return {"samples": samples, "orders_landed": landed, "rows_to_silver": moved,
            "rows_per_second": round(moved / caught_up, 1), "seconds_to_catch_up": round(caught_up - minutes * 60, 1)}


def _silver(sample: ContinuousSample) -> int:
    return int(sample.spark.read.format("delta").load(str(sample.table(SILVER))).count())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("latency", "soak"))
    parser.add_argument("--probes", type=int, default=20)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=100, help="orders per second in the soak (one file)")
    parser.add_argument("--interval", default="1 second", help="pipelines.trigger.interval")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--workdir")
    args = parser.parse_args(argv)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-continuous-"))
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    try:
        if args.mode == "latency":
            figures = latency(work, args.probes, args.interval)
            print(f"[latency] probes: {', '.join(f'{s:.2f}s' for s in figures['probes'])}")
            print(f"[latency] median {figures['median_s']:.2f}s, p95 {figures['p95_s']:.2f}s at a "
                  f"{args.interval} trigger (wanted: median <= 3 s: "
                  f"{'OK' if figures['median_s'] <= 3.0 else 'OVER'})")
        else:
            figures = soak(work, args.minutes, args.rate, args.interval,
                           lambda s: print(f"[soak] {json.dumps(s)}", flush=True))
            print(f"[soak] {figures['orders_landed']:,} orders landed, {figures['rows_to_silver']:,} reached silver, "
                  f"{figures['rows_per_second']} rows/s; caught up {figures['seconds_to_catch_up']}s after the "
                  "last file")
    finally:
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

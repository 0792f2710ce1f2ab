"""Benchmark harness: run the framework and its hand-written baseline alternately in one process.

Every benchmark prints per-run times, the medians, and the ratio ``framework / baseline`` last.
Absolute times on a 2-core machine are noise; the ratio is the figure that counts (DESIGN.md §7).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path


@dataclass
class Comparison:
    name: str
    framework_s: list[float] = field(default_factory=list)
    baseline_s: list[float] = field(default_factory=list)
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def framework_median(self) -> float:
        return statistics.median(self.framework_s)

    @property
    def baseline_median(self) -> float:
        return statistics.median(self.baseline_s)

    @property
    def ratio(self) -> float:
        return self.framework_median / self.baseline_median

    def report(self, limit: float | None = None) -> str:
        verdict = ""
        if limit is not None:
            verdict = f"  (limit {limit:.2f}: {'OK' if self.ratio <= limit else 'OVER'})"
        lines = [
            f"[{self.name}] framework runs: {', '.join(f'{t:.2f}s' for t in self.framework_s)}",
            f"[{self.name}] baseline  runs: {', '.join(f'{t:.2f}s' for t in self.baseline_s)}",
            f"[{self.name}] medians: framework {self.framework_median:.2f}s, baseline {self.baseline_median:.2f}s",
        ]
        lines += [f"[{self.name}] {k}: {v}" for k, v in self.extra.items()]
        lines.append(f"[{self.name}] ratio framework/baseline = {self.ratio:.3f}{verdict}")
        return "\n".join(lines)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def alternate(name: str, framework: Callable[[int], object], baseline: Callable[[int], object],
              runs: int = 3, setup: Callable[[int], object] | None = None, warmup: bool = False) -> Comparison:
    """Run ``setup(i)`` then ``framework(i)`` / ``baseline(i)`` alternately (order flipped every run).

    With ``warmup``, each side first runs once untimed with ``i = -1`` (JIT and caches warm for both).
    """
    result = Comparison(name)
    if warmup:
        for label, fn in (("framework", framework), ("baseline", baseline)):
            if setup is not None:
                setup(-1)
            elapsed = timed(partial(fn, -1))
            print(f"  warm-up {label}: {elapsed:.2f}s (not counted)", file=sys.stderr, flush=True)
    for i in range(runs):
        order = [("framework", framework), ("baseline", baseline)]
        if i % 2:
            order.reverse()
        for label, fn in order:
            if setup is not None:
                setup(i)
            elapsed = timed(partial(fn, i))
            (result.framework_s if label == "framework" else result.baseline_s).append(elapsed)
            print(f"  run {i + 1}/{runs} {label}: {elapsed:.2f}s", file=sys.stderr, flush=True)
    return result


def common_args(description: str, default_scale: float = 1.0) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--scale", type=float, default=default_scale,
                        help="multiply the default data size (default %(default)s)")
    parser.add_argument("--runs", type=int, default=3, help="alternating runs per side (median reported)")
    parser.add_argument("--workdir", type=Path, default=None, help="where to generate data (default: a temp dir)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results as JSON here")
    return parser


def write_json(path: Path | None, *comparisons: Comparison) -> None:
    if path is None:
        return
    path.write_text(json.dumps([asdict(c) | {"ratio": c.ratio} for c in comparisons], indent=2))

"""``make bench``: every benchmark at its default size, one after the other, each in its own process (a fresh
JVM each, so that one benchmark's JIT and caches do not favour the next). Stops at the first that fails.

Run: ``.venv/bin/python -m bench.run_all [--only NAME ...]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
SCRIPTS = ("bench_runner", "bench_autoloader", "bench_quality", "bench_cdc", "bench_cdc_peer", "bench_peer",
           "bench_sql", "bench_jdbc", "bench_kafka", "bench_devloop", "bench_serve", "bench_testkit")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", nargs="*", default=None, help="run only these (e.g. bench_sql)")
    args = parser.parse_args()
    names = [n for n in SCRIPTS if not args.only or n in args.only]
    missing = [n for n in names if not (BENCH / f"{n}.py").exists()]
    if missing:
        print(f"run_all: no such benchmark: {', '.join(missing)}", file=sys.stderr)
        return 2
    for name in names:
        print(f"== {name}", flush=True)
        code = subprocess.call([sys.executable, "-m", f"bench.{name}"], cwd=BENCH.parent)
        if code != 0:
            print(f"run_all: {name} failed (exit {code})", file=sys.stderr)
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())

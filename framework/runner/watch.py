"""``medallion watch``: an update whenever new files land in the pipeline's file sources (file arrival).

The folders are listed before each update, so files that land while an update runs start another update right
after it (after the debounce), whether or not that update already read them: no arrival is lost. A burst of files
makes one update; an update that could not start because another one held the storage is tried again.
"""

from __future__ import annotations

import re
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

from framework.errors import ConcurrentUpdateError
from framework.runner.update import UpdateOptions, resolve_pipeline, run_update
from framework.spec import PipelineSpec

_GLOB = re.compile(r"[*?\[{]")


def watch_root(path: str) -> str:
    """The folder to watch for a file source's path: the path itself, or the part before its first glob
    component (``/landing/*/orders`` → ``/landing``)."""
    parts = path.split("/")
    for i, part in enumerate(parts):
        if _GLOB.search(part):
            return "/".join(parts[:i]) or "/"
    return path


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set ``stop`` (the running update finishes); a second signal acts as usual."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum: int, _frame: object) -> None:
        stop.set()
        signal.signal(signum, previous[signal.Signals(signum)])

    for sig in previous:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def watch_spec(spec: PipelineSpec, debounce_s: float = 2.0, stop: threading.Event | None = None,
               max_updates: int | None = None, *, poll_s: float = 0.5,
               spark: SparkSession | None = None) -> int:
    """Run one update now, then one per debounced burst of new files, one at a time, until stopped.

    Args:
        spec: The pipeline.
        debounce_s: Seconds without a new or changed file that end a burst.
        stop: Set it to stop watching (SIGINT/SIGTERM set it when called from the main thread).
        max_updates: Stop after this many updates (tests, scripts).
        poll_s: How often the folders are listed.
        spark: The session to run the updates on (default: the active one, or a new one).

    Returns:
        0 if every update succeeded, 1 if one failed, 2 if the pipeline reads no file source to watch.
    """
    from framework.autoloader.watch import watch

    router, _resolution = resolve_pipeline(spec, spark)
    paths = list(dict.fromkeys(watch_root(p) for p in router.watched_paths))
    if not paths:
        print(f"'{spec.name}' reads no file sources: nothing to watch", file=sys.stderr)
        return 2
    stop = stop or threading.Event()
    counts = {"updates": 0, "failed": 0}

    def update() -> bool:
        try:
            result = run_update(spec, UpdateOptions(write_report=True), spark=spark)
        except ConcurrentUpdateError as exc:  # another update holds the storage: these files are still pending
            print(f"{exc.message}; trying again in {debounce_s:.1f}s", file=sys.stderr)
            return False
        counts["updates"] += 1
        counts["failed"] += 0 if result.succeeded else 1
        if max_updates is not None and counts["updates"] >= max_updates:
            stop.set()
        elif counts["updates"] == 1:
            print(f"watching {', '.join(paths)} (debounce {debounce_s:.1f}s); Ctrl-C to stop", file=sys.stderr)
        return True

    with _stop_on_signals(stop):
        watch(paths, update, debounce_s, stop, poll_s=poll_s, call_first=True)
    print(f"stopped after {counts['updates']} update(s), {counts['failed']} failed", file=sys.stderr)
    return 0 if counts["failed"] == 0 else 1

"""Progress during long flows: every few seconds, one line per running streaming query (its last micro-batch:
number, rows, rows per second, what it read up to), so a flow that runs for minutes is never silent. Plain
lines, readable in CI logs as on a terminal."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.runner.progress import ProgressListener

INTERVAL_ENV = "MEDALLION_PROGRESS_SECONDS"
DEFAULT_INTERVAL = 10.0


def describe_progress(name: str, progress: dict[str, Any]) -> str:
    """One line for a streaming query's last progress report (``StreamingQuery.lastProgress``)."""
    rows = int(progress.get("numInputRows") or 0)
    rate = float(progress.get("processedRowsPerSecond") or 0.0)
    ends = [str(s.get("endOffset"))[:60] for s in progress.get("sources") or [] if s.get("endOffset") is not None]
    where = f", read up to {'; '.join(ends)}" if ends else ""
    return f"{name}: batch {progress.get('batchId')}, {rows} rows, {rate:.0f} rows/s{where}"


@contextmanager
def ticking(spark: SparkSession, listener: ProgressListener, interval: float | None = None,
            starts: Mapping[str, float] | None = None) -> Iterator[None]:
    """Report the session's active streaming queries through ``listener.note`` every ``interval`` seconds
    (``MEDALLION_PROGRESS_SECONDS``, default 10) while the block runs. ``starts``: when each flow started
    (``time.monotonic()``, by flow name, which is its query's name), for how long a first micro-batch has run;
    a query not in it counts from the block's start."""
    seconds = interval if interval is not None else float(os.environ.get(INTERVAL_ENV, DEFAULT_INTERVAL))
    stop = threading.Event()
    thread = threading.Thread(target=_tick, args=(spark, listener, seconds, stop, starts or {}), daemon=True,
                              name="medallion-progress")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _tick(spark: SparkSession, listener: ProgressListener, seconds: float, stop: threading.Event,
          starts: Mapping[str, float]) -> None:
    last: dict[str, Any] = {}
    started = time.monotonic()
    while not stop.wait(seconds):
        for query in list(spark.streams.active):
            try:
                progress = query.lastProgress
                name = query.name or str(query.id)
            except Exception:  # the query ended between the listing and the read
                continue
            if progress and last.get(name) != progress.get("batchId"):
                last[name] = progress.get("batchId")
                listener.note(describe_progress(name, progress))
            elif not progress:
                running = time.monotonic() - starts.get(name, started)
                listener.note(f"{name}: first micro-batch running ({running:.0f}s)")

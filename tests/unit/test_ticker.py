"""framework.runner.ticker: the progress lines of running streaming queries (no Spark: a stand-in session)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

from framework.runner.progress import ProgressListener
from framework.runner.ticker import ticking


class Notes(ProgressListener):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def note(self, text: str) -> None:
        self.lines.append(text)


def _session(*queries: Any) -> Any:
    return SimpleNamespace(streams=SimpleNamespace(active=list(queries)))


def test_a_first_micro_batch_is_timed_from_its_flows_start_not_from_the_updates() -> None:
    silver = SimpleNamespace(name="orders_silver", id="q1", lastProgress=None)
    other = SimpleNamespace(name="no_start_known", id="q2", lastProgress=None)
    notes = Notes()
    with ticking(_session(silver, other), notes, interval=0.05, starts={"orders_silver": time.monotonic() - 42}):
        time.sleep(0.2)
    assert "orders_silver: first micro-batch running (42s)" in notes.lines
    assert "no_start_known: first micro-batch running (0s)" in notes.lines  # counted from the ticker's start


def test_a_new_batch_is_reported_once() -> None:
    progress = {"batchId": 3, "numInputRows": 10, "processedRowsPerSecond": 5.0, "sources": []}
    query = SimpleNamespace(name="bronze", id="q", lastProgress=progress)
    notes = Notes()
    with ticking(_session(query), notes, interval=0.03):
        time.sleep(0.2)
    assert notes.lines == ["bronze: batch 3, 10 rows, 5 rows/s"]

"""The event log's background writer: commits what is pending when asked, no sooner than its least interval
after the last commit (continuous updates), and everything at close."""

from __future__ import annotations

import time
from itertools import pairwise
from typing import Any

from framework.events import EventLog


class _Recorded(EventLog):
    """An event log whose commits are recorded instead of written (no Spark)."""

    def __init__(self, interval: float) -> None:
        super().__init__("unused", "pipeline", "name", "update")
        self.min_commit_interval_s = interval
        self.commits: list[tuple[float, int]] = []

    def flush(self, spark: Any) -> int:
        with self._lock:
            pending, self._events = self._events, []
        if pending:
            self.commits.append((time.monotonic(), len(pending)))
        return len(pending)


def _written(log: _Recorded, events: int, gap_s: float, last: bool = False) -> _Recorded:
    """``events`` events, each followed by a commit request and ``gap_s`` of waiting, then (``last``) one more
    event and the log closed."""
    log.start_writer(None)  # type: ignore[arg-type]
    for i in range(events):
        log.emit("flow_progress", f"event {i}")
        log.commit_soon()
        time.sleep(gap_s)
    if last:
        log.emit("update_progress", "last")
    log.close(None)  # type: ignore[arg-type]
    return log


def test_commits_are_spaced_by_the_least_interval_and_close_writes_the_rest() -> None:
    log = _written(_Recorded(0.4), events=6, gap_s=0.1, last=True)
    assert sum(n for _, n in log.commits) == 7  # every event written once
    times = [t for t, _ in log.commits]
    assert len(times) >= 2 and all(b - a >= 0.39 for a, b in pairwise(times[:-1]))  # the last: close()


def test_without_an_interval_each_request_commits() -> None:
    log = _written(_Recorded(0.0), events=3, gap_s=0.2)
    assert [n for _, n in log.commits] == [1, 1, 1]

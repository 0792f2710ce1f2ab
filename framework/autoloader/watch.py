"""File-arrival trigger: poll folders and call back once per debounced burst of new or changed files."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from framework.autoloader.paths import list_files, to_local

Snapshot = dict[Path, tuple[int, int]]


def snapshot(paths: Iterable[Path]) -> Snapshot:
    """Size and modification time (ms) of every visible file under the folders (missing folders are empty)."""
    snap: Snapshot = {}
    for root in paths:
        for f in list_files(root):
            snap[f.path] = (f.size, f.mtime_ms)
    return snap


def arrivals(before: Snapshot, after: Snapshot) -> list[Path]:
    """Files that are new or changed in ``after`` (deleted or archived files are not arrivals)."""
    return sorted(p for p, sig in after.items() if before.get(p) != sig)


def watch(paths: Iterable[str | Path], on_arrival: Callable[[], None], debounce_s: float,
          stop: threading.Event, *, poll_s: float = 0.5, initial: bool = False) -> int:
    """Call ``on_arrival`` after files land in ``paths``, once per burst, until ``stop`` is set.

    A burst ends when no file was added or changed for ``debounce_s`` seconds. ``on_arrival`` runs in the calling
    thread, so two calls never overlap; files landing while it runs start the next burst. Exceptions from
    ``on_arrival`` propagate (the caller decides whether to keep watching).

    Args:
        paths: folders to watch (local paths or ``file:`` URIs); they may not exist yet.
        on_arrival: the callback (e.g. run one pipeline update).
        debounce_s: quiet time that ends a burst.
        stop: set it to end the watch (checked at least every ``poll_s``).
        poll_s: polling interval.
        initial: also call once at start when the folders already hold files.

    Returns:
        How many times ``on_arrival`` was called.
    """
    roots = [p if isinstance(p, Path) else to_local(p) for p in paths]
    seen: Snapshot = {} if initial else snapshot(roots)
    calls = 0
    while not stop.is_set():
        current = snapshot(roots)
        if not arrivals(seen, current):
            seen = current
            stop.wait(poll_s)
            continue
        last_change = time.monotonic()
        while not stop.is_set() and time.monotonic() - last_change < debounce_s:
            stop.wait(min(poll_s, debounce_s))
            latest = snapshot(roots)
            if latest != current:
                current, last_change = latest, time.monotonic()
        if stop.is_set():
            break
        seen = current
        on_arrival()
        calls += 1
    return calls

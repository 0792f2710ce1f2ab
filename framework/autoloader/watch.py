"""File-arrival trigger: poll folders and call back once per debounced burst of new or changed files.

No notification is lost: the folders are listed *before* each call, so a file that lands while the callback runs
(an update) differs from that listing and starts the next burst as soon as the call returns. A file is known by
its path, size, modification time (ns) and inode, so a file renamed into place (written under a hidden temporary
name, then ``os.rename``d, as Spark and most copy tools do) is an arrival even when it replaces a file of the same
size written in the same millisecond.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from framework.autoloader.paths import is_hidden, to_local

Signature = tuple[int, int, int]  # size, mtime in ns, inode
Snapshot = dict[Path, Signature]


def snapshot(paths: Iterable[Path]) -> Snapshot:
    """Size, modification time (ns) and inode of every visible file under the folders (Spark's rules for hidden
    names; missing folders are empty)."""
    snap: Snapshot = {}
    for root in paths:
        try:
            st = root.stat()
        except OSError:
            continue
        if root.is_file():
            snap[root] = (st.st_size, st.st_mtime_ns, st.st_ino)
        else:
            _walk(root, snap)
    return snap


def _walk(folder: Path, snap: Snapshot) -> None:
    """Add the visible files below ``folder`` (``os.scandir``: the inode comes with the listing)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:  # removed or unreadable while we walk
        return
    for entry in entries:
        if is_hidden(entry.name):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):  # as os.walk and Spark's listing: no link loops
                _walk(Path(entry.path), snap)
            elif entry.is_file():
                st = entry.stat()
                snap[Path(entry.path)] = (st.st_size, st.st_mtime_ns, entry.inode())
        except OSError:  # gone between the listing and the stat: archived or renamed away
            continue


def arrivals(before: Snapshot, after: Snapshot) -> list[Path]:
    """Files that are new or changed in ``after`` (deleted or archived files are not arrivals)."""
    return sorted(p for p, sig in after.items() if before.get(p) != sig)


def _settle(roots: list[Path], current: Snapshot, debounce_s: float, max_delay_s: float, poll_s: float,
            stop: threading.Event) -> Snapshot:
    """Wait until nothing was added or changed for ``debounce_s`` (at most ``max_delay_s`` after the first
    arrival, so a steady trickle of files still gets updates); the listing at the end."""
    first = last_change = time.monotonic()
    while not stop.is_set():
        now = time.monotonic()
        if now - last_change >= debounce_s or now - first >= max_delay_s:
            break
        stop.wait(min(poll_s, debounce_s))
        latest = snapshot(roots)
        if arrivals(current, latest):
            last_change = time.monotonic()
        current = latest
    return current


def watch(paths: Iterable[str | Path], on_arrival: Callable[[], bool | None], debounce_s: float,
          stop: threading.Event, *, poll_s: float = 0.5, initial: bool = False, call_first: bool = False,
          max_delay_s: float | None = None) -> int:
    """Call ``on_arrival`` after files land in ``paths``, once per burst, until ``stop`` is set.

    A burst ends when no file was added or changed for ``debounce_s`` seconds. ``on_arrival`` runs in the calling
    thread, so two calls never overlap; files landing while it runs start the next burst (the folders are listed
    before each call). Exceptions from ``on_arrival`` propagate (the caller decides whether to keep watching).

    Args:
        paths: folders (or single files) to watch, local paths or ``file:`` URIs; they may not exist yet.
        on_arrival: the callback (e.g. run one pipeline update). It returns ``False`` when it could not handle
            the arrivals (e.g. another update held the storage): it is called again after ``debounce_s``.
        debounce_s: quiet time that ends a burst.
        stop: set it to end the watch (checked at least every ``poll_s``).
        poll_s: polling interval.
        initial: also call once at start when the folders already hold files.
        call_first: call once at start in any case (the folders are listed first, so files landing during that
            call are arrivals).
        max_delay_s: longest wait after a burst's first file (default: ten debounce periods, at least 30 s).

    Returns:
        How many times ``on_arrival`` was called.
    """
    roots = [p if isinstance(p, Path) else to_local(p) for p in paths]
    max_delay = max(10 * debounce_s, 30.0) if max_delay_s is None else max_delay_s
    seen: Snapshot = {} if initial else snapshot(roots)
    pending, calls = call_first, 0
    while not stop.is_set():
        current = snapshot(roots)
        if arrivals(seen, current):
            pending = True
            current = _settle(roots, current, debounce_s, max_delay, poll_s, stop)
        seen = current
        if stop.is_set():
            break
        if not pending:
            stop.wait(poll_s)
            continue
        calls += 1
        pending = on_arrival() is False
        if pending:
            stop.wait(debounce_s)
    return calls

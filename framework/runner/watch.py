"""``medallion watch``: an update whenever new files land in the pipeline's file sources (file arrival)."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

from framework.runner.update import UpdateOptions, resolve_pipeline, run_update
from framework.spec import PipelineSpec


def watch_spec(spec: PipelineSpec, debounce_s: float = 2.0, stop: threading.Event | None = None,
               max_updates: int | None = None) -> int:
    """Run one update now, then one per debounced burst of new files, one at a time, until interrupted."""
    from framework.autoloader.watch import watch

    router, _resolution = resolve_pipeline(spec)
    paths = list(router.watched_paths)
    if not paths:
        print(f"'{spec.name}' reads no file sources: nothing to watch", file=sys.stderr)
        return 2
    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    failures = 0
    updates = 0

    def update() -> None:
        nonlocal failures, updates
        result = run_update(spec, UpdateOptions(write_report=True))
        updates += 1
        failures += 0 if result.succeeded else 1
        if max_updates is not None and updates >= max_updates:
            stop.set()

    update()
    print(f"watching {', '.join(paths)} (debounce {debounce_s:.1f}s); Ctrl-C to stop", file=sys.stderr)
    kwargs: dict[str, Any] = {}
    if not stop.is_set():
        watch(paths, update, debounce_s, stop, **kwargs)
    print(f"stopped after {updates} update(s), {failures} failed", file=sys.stderr)
    return 0 if failures == 0 else 1

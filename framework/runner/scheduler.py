"""Which flows of an update may start, which must be skipped, and when the update is done.

Pure bookkeeping over the dependency graph, without Spark or threads: the executor asks it what is ready,
tells it what finished, and runs the flows. A flow runs when every flow it depends on has COMPLETED (or was
EXCLUDED by a selection); it is SKIPPED when one of them FAILED or was SKIPPED itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

QUEUED, RUNNING, COMPLETED, FAILED, SKIPPED, EXCLUDED = (
    "QUEUED", "RUNNING", "COMPLETED", "FAILED", "SKIPPED", "EXCLUDED")
_OK = frozenset({COMPLETED, EXCLUDED})
_BAD = frozenset({FAILED, SKIPPED})


@dataclass
class Scheduler:
    """The state of every flow of one update, in graph order.

    Args:
        order: every flow key, in dependency order.
        deps: for each flow, the flows it must wait for.
        initial: statuses known before anything runs (EXCLUDED flows, views computed where read).
    """

    order: Sequence[str]
    deps: Mapping[str, frozenset[str]]
    initial: Mapping[str, str] = field(default_factory=dict)
    status: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.status = {key: self.initial.get(key, QUEUED) for key in self.order}

    def skippable(self) -> list[tuple[str, str]]:
        """Queued flows that can no longer run, each with the upstream flow that failed or was skipped.

        Marks them SKIPPED; call until it returns nothing (a skip can cause further skips)."""
        skipped: list[tuple[str, str]] = []
        changed = True
        while changed:
            changed = False
            for key in self.order:
                if self.status[key] != QUEUED:
                    continue
                bad = next((d for d in self.order if d in self.deps.get(key, ()) and self.status[d] in _BAD),
                           None)
                if bad is not None:
                    self.status[key] = SKIPPED
                    skipped.append((key, bad))
                    changed = True
        return skipped

    def ready(self) -> list[str]:
        """Queued flows whose dependencies all completed (or were excluded), in graph order; marks them RUNNING."""
        out = [k for k in self.order
               if self.status[k] == QUEUED and all(self.status.get(d) in _OK for d in self.deps.get(k, ()))]
        for key in out:
            self.status[key] = RUNNING
        return out

    def finish(self, key: str, ok: bool) -> None:
        """Record the end of a running flow."""
        if self.status[key] != RUNNING:
            raise ValueError(f"flow {key!r} is {self.status[key]}, not RUNNING")
        self.status[key] = COMPLETED if ok else FAILED

    @property
    def pending(self) -> int:
        """How many flows are still queued."""
        return sum(1 for s in self.status.values() if s == QUEUED)

    @property
    def running(self) -> int:
        """How many flows are running."""
        return sum(1 for s in self.status.values() if s == RUNNING)

"""The update scheduler decides what runs, what is skipped and when the update is done, without Spark."""

from __future__ import annotations

import pytest

from framework.runner.scheduler import COMPLETED, EXCLUDED, FAILED, RUNNING, SKIPPED, Scheduler

# a -> b -> d, a -> c, e independent
ORDER = ["a", "b", "c", "d", "e"]
DEPS = {"b": frozenset({"a"}), "c": frozenset({"a"}), "d": frozenset({"b"})}


def test_independent_flows_start_together_and_dependants_wait() -> None:
    s = Scheduler(ORDER, DEPS)
    assert s.ready() == ["a", "e"]
    assert s.ready() == []  # nothing new until something finishes
    s.finish("a", ok=True)
    assert s.ready() == ["b", "c"]
    s.finish("b", ok=True)
    assert s.ready() == ["d"]
    for key in ("c", "d", "e"):
        s.finish(key, ok=True)
    assert s.pending == 0 and s.running == 0
    assert set(s.status.values()) == {COMPLETED}


def test_a_failure_skips_every_dependant_transitively_and_nothing_else() -> None:
    s = Scheduler(ORDER, DEPS)
    s.ready()
    s.finish("a", ok=False)
    assert s.skippable() == [("b", "a"), ("c", "a"), ("d", "b")]
    assert s.skippable() == []
    assert s.status == {"a": FAILED, "b": SKIPPED, "c": SKIPPED, "d": SKIPPED, "e": RUNNING}


def test_excluded_flows_count_as_done_for_their_dependants() -> None:
    s = Scheduler(ORDER, DEPS, initial={"a": EXCLUDED, "c": EXCLUDED})
    assert s.ready() == ["b", "e"]
    assert s.pending == 1  # d


def test_finishing_a_flow_that_is_not_running_is_an_error() -> None:
    s = Scheduler(ORDER, DEPS)
    with pytest.raises(ValueError, match="'b' is QUEUED"):
        s.finish("b", ok=True)

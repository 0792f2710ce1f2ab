"""The keyed recomputes' pure parts (issue 37, framework/incremental/keyed.py and planner.py): key values from
partition values and statistics, the predicate, the estimate of the files that may hold a key, the choice."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal

from framework.incremental.analysis import (
    APPEND_ONLY,
    COMPLETE_RECOMPUTE,
    GROUP_AGGREGATE,
    PARTITION_OVERWRITE,
    ROW_BASED,
    WINDOW_FUNCTION,
    Analysis,
    Issue,
)
from framework.incremental.changes import Change, Snapshot
from framework.incremental.keyed import holding_bytes, predicate, typed
from framework.incremental.planner import choose, query_issues
from framework.refresh_policy import RefreshPolicy

NOT = (Issue("OPERATOR_NOT_SUPPORTED", "x"),)
WINDOW = Analysis({APPEND_ONLY: NOT, GROUP_AGGREGATE: NOT, ROW_BASED: NOT, WINDOW_FUNCTION: (),
                   PARTITION_OVERWRITE: ()}, keyed=(("k", "k"),))


def test_typed_values_from_text() -> None:
    assert typed("5", "bigint") == 5 and typed(None, "int") is None
    assert typed("2024-02-29", "date") == datetime.date(2024, 2, 29)
    assert typed("true", "boolean") is True and typed(False, "boolean") is False
    assert typed("1.50", "decimal(10,2)") == Decimal("1.50") and typed(7, "string") == "7"


def test_predicate() -> None:
    assert predicate(("k",), ("string",), set()) == "false"
    assert predicate(("k",), ("string",), {("a",), (None,)}) == "`k` IN ('a') OR `k` IS NULL"
    assert predicate(("k",), ("string",), {(None,)}) == "`k` IS NULL"
    assert predicate(("k",), ("string",), {("it's \\",)}) == "`k` IN ('it\\'s \\\\')"
    assert predicate(("d",), ("date",), {(datetime.date(2024, 1, 2),)}) == "`d` IN (CAST('2024-01-02' AS DATE))"
    two = predicate(("a`b", "n"), ("string", "bigint"), {("x", 1), ("y", None)})
    assert two == "(`a``b` = 'x' AND `n` = CAST('1' AS BIGINT)) OR (`a``b` = 'y' AND `n` IS NULL)"


def _file(size: int, *, parts: dict[str, str | None] | None = None, low: object = None, high: object = None,
          nulls: int = 0) -> dict[str, object]:
    stats = {"numRecords": 10, "minValues": {"k": low}, "maxValues": {"k": high}, "nullCount": {"k": nulls}} \
        if low is not None else {}
    return {"size": size, "partitionValues": parts or {}, "stats": json.dumps(stats)}


def test_holding_bytes_by_partition_values_and_statistics() -> None:
    parts = {"a": _file(10, parts={"k": "1"}), "b": _file(20, parts={"k": "2"}), "c": _file(40, parts={"k": None})}
    assert holding_bytes(parts, ["k"], ("k",), ("int",), {(2,)}) == 20
    assert holding_bytes(parts, ["k"], ("k",), ("int",), {(None,), (1,)}) == 50
    ranged = {"a": _file(10, low=0, high=9), "b": _file(20, low=10, high=19, nulls=3), "c": _file(40)}
    assert holding_bytes(ranged, [], ("k",), ("bigint",), {(12,)}) == 60  # c has no statistics: it may
    assert holding_bytes(ranged, [], ("k",), ("bigint",), {(None,)}) == 60
    assert holding_bytes(ranged, [], ("k",), ("bigint",), {(99,)}) == 40


def _change(table: int, version: int = 2, issue: Issue | None = None) -> Change:
    return Change(Snapshot("/t", version, "id", "{}", (), table, False, ("k",)), 1, issue=issue)


def test_keyed_techniques_ignore_the_append_issues() -> None:
    """An update or delete stops the append-based techniques, not the keyed ones; the cheaper keyed one wins."""
    not_append = Issue("CHANGES_NOT_APPEND_ONLY", "deleted")
    plan = choose(RefreshPolicy.AUTO, WINDOW, [_change(10_000, issue=not_append)], view_bytes=5_000,
                  own_costs={WINDOW_FUNCTION: 900, PARTITION_OVERWRITE: 300})
    by = {c.technique: c for c in plan.candidates}
    assert plan.chosen == PARTITION_OVERWRITE and by[WINDOW_FUNCTION].applicable
    assert not_append in by[APPEND_ONLY].issues and by[COMPLETE_RECOMPUTE].cost == 15_000
    costly = choose(RefreshPolicy.AUTO, WINDOW, [_change(1_000)], view_bytes=10,
                    own_costs={WINDOW_FUNCTION: 5_000, PARTITION_OVERWRITE: 5_000})
    assert costly.chosen == COMPLETE_RECOMPUTE


def test_own_issues_stop_one_technique() -> None:
    unpartitioned = {PARTITION_OVERWRITE: [Issue("VIEW_NOT_PARTITIONED", "none")]}
    plan = choose(RefreshPolicy.INCREMENTAL, WINDOW, [_change(1_000)], view_bytes=10, own_issues=unpartitioned,
                  own_costs={WINDOW_FUNCTION: 50, PARTITION_OVERWRITE: 1})
    assert plan.chosen == WINDOW_FUNCTION
    assert query_issues(WINDOW, unpartitioned) == []
    blocked = {**unpartitioned, WINDOW_FUNCTION: [Issue("TOO_MANY_CHANGED_KEYS", "many")]}
    assert {i.issue_type for i in query_issues(WINDOW, blocked)} >= {"VIEW_NOT_PARTITIONED", "TOO_MANY_CHANGED_KEYS"}
    first = choose(RefreshPolicy.INCREMENTAL, WINDOW, None, view_bytes=0)
    assert first.chosen == COMPLETE_RECOMPUTE
    assert all(any(i.issue_type == "NO_PREVIOUS_REFRESH" for i in c.issues) for c in first.candidates
               if c.technique in (WINDOW_FUNCTION, PARTITION_OVERWRITE))


def test_groups_recomputed_when_not_merged() -> None:
    """GROUP_AGGREGATE by changed groups: its cost is the keyed estimate and the inputs' append issues are not
    its; without ``groups`` the merge's cost and issues hold."""
    agg = Analysis({APPEND_ONLY: NOT, GROUP_AGGREGATE: (), ROW_BASED: NOT, WINDOW_FUNCTION: NOT,
                    PARTITION_OVERWRITE: ()}, keyed=(("k", "k"),), by_groups=True)
    deleted = [_change(10_000, issue=Issue("CHANGES_NOT_APPEND_ONLY", "deleted"))]
    unpartitioned = {PARTITION_OVERWRITE: [Issue("VIEW_NOT_PARTITIONED", "none")]}
    plan = choose(RefreshPolicy.AUTO, agg, deleted, view_bytes=100, own_issues=unpartitioned,
                  own_costs={GROUP_AGGREGATE: 700}, groups=True)
    assert plan.chosen == GROUP_AGGREGATE and {c.technique: c.cost for c in plan.candidates}[GROUP_AGGREGATE] == 700
    merged = choose(RefreshPolicy.AUTO, agg, deleted, view_bytes=100, own_issues=unpartitioned,
                    own_costs={GROUP_AGGREGATE: 700})
    assert merged.chosen == COMPLETE_RECOMPUTE
    tie = choose(RefreshPolicy.AUTO, agg, deleted, view_bytes=100, own_costs={GROUP_AGGREGATE: 700,
                                                                             PARTITION_OVERWRITE: 700}, groups=True)
    assert tie.chosen == PARTITION_OVERWRITE

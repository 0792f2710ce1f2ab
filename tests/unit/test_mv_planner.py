"""The cost model and the policy's choice (issue 37, framework/incremental/planner.py), without Spark."""

from __future__ import annotations

from framework.incremental.analysis import (
    APPEND_ONLY,
    COMPLETE_RECOMPUTE,
    GROUP_AGGREGATE,
    ROW_BASED,
    Analysis,
    Issue,
)
from framework.incremental.changes import Change, Snapshot
from framework.incremental.planner import NO_OP, choose, full_plan
from framework.refresh_policy import RefreshPolicy

NOT = (Issue("OPERATOR_NOT_SUPPORTED", "x"),)
NO_JOIN = (Issue("NO_JOIN", "none"),)
AGG = Analysis({APPEND_ONLY: (Issue("AGGREGATE_IN_QUERY", "agg"),), GROUP_AGGREGATE: (), ROW_BASED: NOT})
FILTER = Analysis({APPEND_ONLY: (), GROUP_AGGREGATE: (Issue("NO_GROUP_AGGREGATE", "none"),), ROW_BASED: NO_JOIN})
NEITHER = Analysis({APPEND_ONLY: NOT, GROUP_AGGREGATE: NOT, ROW_BASED: NOT})
JOIN = Analysis({APPEND_ONLY: (Issue("JOIN_IN_QUERY", "join"),), GROUP_AGGREGATE: NOT, ROW_BASED: ()})


def _change(table: int, appended: int, seen: int = 1, version: int = 2, issue: Issue | None = None) -> Change:
    snap = Snapshot("/t", version, "id", "{}", (), table, True)
    return Change(snap, seen, ("f",) * (appended > 0), appended, 10, issue)


def test_auto_picks_the_cheapest() -> None:
    plan = choose(RefreshPolicy.AUTO, AGG, [_change(10_000, 100)], view_bytes=50)
    assert plan.chosen == GROUP_AGGREGATE
    costs = {c.technique: c.cost for c in plan.candidates}
    assert costs[GROUP_AGGREGATE] == 200 and costs[COMPLETE_RECOMPUTE] == 10_050
    big_view = choose(RefreshPolicy.AUTO, AGG, [_change(1_000, 100)], view_bytes=5_000)
    assert big_view.chosen == COMPLETE_RECOMPUTE  # merging into a view larger than the input costs more


def test_incremental_prefers_incremental_whatever_the_cost() -> None:
    assert choose(RefreshPolicy.INCREMENTAL, AGG, [_change(1_000, 100)], view_bytes=5_000).chosen == GROUP_AGGREGATE
    assert choose(RefreshPolicy.INCREMENTAL, FILTER, [_change(1_000, 100)], 0).chosen == APPEND_ONLY


def test_no_change_is_a_no_op_and_deletes_recompute() -> None:
    assert choose(RefreshPolicy.AUTO, FILTER, [_change(1_000, 0, seen=2)], 10).chosen == NO_OP
    deleted = choose(RefreshPolicy.INCREMENTAL, FILTER,
                     [_change(1_000, 0, issue=Issue("CHANGES_NOT_APPEND_ONLY", "v2 deleted"))], 10)
    assert deleted.chosen == COMPLETE_RECOMPUTE
    assert "CHANGES_NOT_APPEND_ONLY" in {i.issue_type for i in deleted.blocking_issues()}
    assert choose(RefreshPolicy.AUTO, NEITHER, [_change(1_000, 0, seen=2)], 10).chosen == COMPLETE_RECOMPUTE


def test_without_state_and_full() -> None:
    first = choose(RefreshPolicy.AUTO, FILTER, None, 0, reason_without_state="first refresh")
    assert first.chosen == COMPLETE_RECOMPUTE
    assert "NO_PREVIOUS_REFRESH" in {i.issue_type for i in first.blocking_issues()}
    plan = full_plan(RefreshPolicy.FULL, "REFRESH POLICY FULL")
    details = plan.details([], 0)
    assert details["technique_information"] == [{"maintenance_type": "MAINTENANCE_TYPE_COMPLETE_RECOMPUTE",
                                                 "is_chosen": True, "is_applicable": True}]
    assert details["refresh_policy"] == "FULL" and details["reason"] == "REFRESH POLICY FULL"


def test_event_shape() -> None:
    details = choose(RefreshPolicy.AUTO, AGG, [_change(10_000, 100)], 50).details([_change(10_000, 100)], 50)
    chosen = [t for t in details["technique_information"] if t["is_chosen"]]
    assert [t["maintenance_type"] for t in chosen] == ["MAINTENANCE_TYPE_GROUP_AGGREGATE"]
    append = next(t for t in details["technique_information"] if t["maintenance_type"].endswith("APPEND_ONLY"))
    assert append["is_applicable"] is False and append["incrementalization_issues"][0]["issue_type"] == \
        "AGGREGATE_IN_QUERY"
    assert details["source_table_information"][0] == {"table_path": "/t", "table_version": 2,
                                                     "table_size_bytes": 10_000, "previous_version": 1,
                                                     "appended_bytes": 100, "appended_rows": 10}


def test_row_based_costs_each_changed_input_with_the_others_whole() -> None:
    small = Change(Snapshot("/dim", 2, "d", "{}", (), 1_000, True), 2)  # no new rows
    plan = choose(RefreshPolicy.AUTO, JOIN, [_change(100_000, 1_000), small], view_bytes=50_000)
    costs = {c.technique: c.cost for c in plan.candidates}
    assert plan.chosen == ROW_BASED and costs[ROW_BASED] == 1_000 + 1_000
    assert costs[COMPLETE_RECOMPUTE] == 101_000 + 50_000

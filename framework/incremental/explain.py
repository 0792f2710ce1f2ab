"""``medallion validate``'s answer per materialized view, as Databricks' ``EXPLAIN CREATE MATERIALIZED VIEW``:
whether its query can be refreshed incrementally, by which technique, and why not. Without running: the
analysis of the resolved query (``analysis.py``), whose inputs are resolution's stand-ins (empty frames), so
whether each input is a Delta table with append-only changes is only known at refresh time."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from framework.incremental.analysis import (
    APPEND_ONLY,
    GROUP_AGGREGATE,
    PARTITION_OVERWRITE,
    ROW_BASED,
    WINDOW_FUNCTION,
    Analysis,
    analyze,
)
from framework.incremental.plan_json import analyzed_plan
from framework.incremental.planner import INCREMENTAL_TECHNIQUES
from framework.refresh_policy import RefreshPolicy, policy_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def _keys(analysis: Analysis) -> str:
    return ", ".join(sorted({view for view, _ in analysis.keyed}))


_WHEN: dict[str, Callable[[Analysis], str]] = {
    APPEND_ONLY: lambda _: "while its inputs are appended to",
    GROUP_AGGREGATE: lambda a: (f"recomputing the groups ({_keys(a)}) its input's changes touch"
                                if a.merge_issues else "while its inputs are appended to"
                                + (f"; recomputing the changed groups ({_keys(a)}) after updates and deletes"
                                   if a.by_groups else "")),
    ROW_BASED: lambda _: "while its inputs are appended to",
    WINDOW_FUNCTION: lambda a: f"recomputing the window partitions ({_keys(a)}) its input's changes touch",
    PARTITION_OVERWRITE: lambda a: f"when the view and its input are partitioned by one of {_keys(a)}",
}


def explain(df: DataFrame, refresh_policy: str | None) -> str:
    """One line: the policy, then the incremental technique the query allows, or the reasons none does."""
    policy = policy_of(refresh_policy)
    if policy is RefreshPolicy.FULL:
        return f"REFRESH POLICY {policy.value}: always a full recompute"
    analysis = analyze(analyzed_plan(df))
    reasons: list[str] = []
    for technique in INCREMENTAL_TECHNIQUES:
        issues = [i for i in analysis.issues.get(technique, ()) if i.issue_type != "INPUT_NOT_DELTA"]
        if not issues:
            return f"REFRESH POLICY {policy.value}: incremental ({technique}) {_WHEN[technique](analysis)}"
        reasons.extend(f"{i.issue_type}: {i.reason}" for i in issues if f"{i.issue_type}: {i.reason}" not in reasons)
    strict = " (INCREMENTAL STRICT fails the update)" if policy is RefreshPolicy.INCREMENTAL_STRICT else ""
    return f"REFRESH POLICY {policy.value}: not incrementalizable{strict}: {'; '.join(reasons)}"

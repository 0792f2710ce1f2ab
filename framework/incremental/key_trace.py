"""Which output columns of a view key its rows by one input's columns, for the keyed recomputes
(``WINDOW_FUNCTION``, ``PARTITION_OVERWRITE``): pure Python over the analyzed plan (as ``analysis.py`` reads it).

A view column is a *key* when it is an input column passed through unchanged (a column or an alias of one, down
every Project) and every ``Aggregate`` on the way groups by it and every ``Window`` partitions by it. Then the
view's rows with a given key value are a function of the input rows with that value alone, so after the input's
rows of some key values changed, recomputing the query for those values only (and replacing the view's rows of
those values) gives a full recompute's rows. The plan must be one chain (Project, Filter, SubqueryAlias, View,
Aggregate, Window) over one relation; anything else (a join, a union, a sort) is an issue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from framework.incremental.plan_tree import PlanNode as _Node
from framework.incremental.plan_tree import plan_tree as _tree

_RELATIONS = frozenset({"LogicalRelation", "DataSourceV2Relation", "DataSourceV2ScanRelation"})
_CHAIN = frozenset({"Project", "Filter", "SubqueryAlias", "View", "Aggregate", "Window"})


@dataclass(frozen=True)
class KeyTrace:
    """The view's key columns as (view column, input column) pairs, how many windows the query has, and why
    the query has no keys (``(issue_type, reason)`` pairs)."""

    columns: tuple[tuple[str, str], ...] = ()
    windows: int = 0
    issues: tuple[tuple[str, str], ...] = ()


def _short(expr: dict[str, Any]) -> str:
    return str(expr.get("class", "")).rsplit(".", 1)[-1]


def trace(plan: list[dict[str, Any]]) -> KeyTrace:
    """The key columns of the query whose analyzed plan (Catalyst's ``toJSON``, parsed) is ``plan``."""
    chain: list[_Node] = []
    node = _tree(plan)[0]
    while node.children:
        if node.cls not in _CHAIN or len(node.children) != 1:
            return KeyTrace(issues=(("OPERATOR_NOT_SUPPORTED", f"the operator {node.cls}: a keyed recompute "
                                                               "needs one input under filters, projections, "
                                                               "aggregates and windows"),))
        chain.append(node)
        node = node.children[0]
    current: dict[int, tuple[str, str]] = {}  # exprId -> (column name here, input column)
    for column in node.fields.get("output") or []:
        current[_id(column[0])] = (str(column[0]["name"]), str(column[0]["name"]))
    allowed: set[str] | None = None  # input columns every aggregate groups by and every window partitions by
    windows = 0
    issues: list[tuple[str, str]] = []
    if node.cls not in _RELATIONS:  # traced all the same: validate's stand-ins for the inputs are local relations
        issues.append(("INPUT_NOT_DELTA", f"the input is not a Delta table of the pipeline ({node.cls})"))
    for step in reversed(chain):
        if step.cls == "Project":
            current = _projected(step.fields.get("projectList") or [], current)
        elif step.cls == "Aggregate":
            grouped = {i: current[i] for i in _attribute_ids(step.fields.get("groupingExpressions")) if i in current}
            allowed = _narrowed(allowed, {c for _, c in grouped.values()})
            current = _projected(step.fields.get("aggregateExpressions") or [], grouped)
        elif step.cls == "Window":
            windows += 1
            spec = step.fields.get("partitionSpec") or []
            if not spec:
                issues.append(("WINDOW_WITHOUT_PARTITION_BY", "a window function without PARTITION BY"))
            allowed = _narrowed(allowed, {current[i][1] for i in _attribute_ids(spec) if i in current})
    columns = tuple((name, source) for name, source in current.values() if allowed is None or source in allowed)
    if not columns and not issues:
        issues.append(("NO_KEY_COLUMN", "no output column is an input column that every GROUP BY and PARTITION "
                                        "BY of the query includes"))
    shaped = all(kind == "INPUT_NOT_DELTA" for kind, _ in issues)
    return KeyTrace(columns if shaped else (), windows, tuple(issues))


def _narrowed(allowed: set[str] | None, columns: set[str]) -> set[str]:
    return set(columns) if allowed is None else allowed & columns


def _id(expr: dict[str, Any]) -> int:
    return int(expr["exprId"]["id"])


def _attribute_ids(expressions: Any) -> list[int]:
    """The ids of the expressions that are plain columns."""
    return [_id(e[0]) for e in expressions or [] if len(e) == 1 and _short(e[0]) == "AttributeReference"]


def _projected(items: list[list[dict[str, Any]]], current: dict[int, tuple[str, str]]) -> dict[int, tuple[str, str]]:
    """The traced columns a projection outputs: a traced column as it is or renamed."""
    out: dict[int, tuple[str, str]] = {}
    for expr in items:
        classes = [_short(e) for e in expr]
        if classes == ["AttributeReference"] and _id(expr[0]) in current:
            out[_id(expr[0])] = current[_id(expr[0])]
        elif classes == ["Alias", "AttributeReference"] and _id(expr[1]) in current:
            out[_id(expr[0])] = (str(expr[0]["name"]), current[_id(expr[1])][1])
    return out

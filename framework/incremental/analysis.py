"""Which incremental technique a materialized view's query allows, decided from its analyzed plan (as
Catalyst's ``toJSON`` gives it: pure Python, tested without Spark), with Databricks' reasons when none does.

A plan is a pre-order list of nodes (``class``, ``num-children``, fields); an expression field is the pre-order
list of its expression nodes, a list of expressions a list of such lists. What is recognised:

* ``APPEND_ONLY``: Project / Filter / Union / SubqueryAlias / View over relations (the pipeline's Delta
  inputs), deterministic expressions without UDFs: the query of the new input rows is the view's new rows.
* ``GROUP_AGGREGATE``: an ``Aggregate`` at the top (below renaming Projects only) over such a subtree, grouping
  by columns, whose outputs are its keys and ``count`` / ``sum`` / ``min`` / ``max`` (not DISTINCT, no FILTER):
  each merges with the view's row of its group (``count`` and ``sum`` add, ``min`` and ``max`` keep the least
  and greatest), which holds while the inputs are only appended to. Otherwise (``avg``, ``count(DISTINCT)``,
  any other deterministic aggregate or expression over aggregates, or inputs that updated or deleted rows),
  when a grouping column is an output read straight from the one input (``key_trace.py``), the changed groups
  are recomputed (``keyed.py``); :attr:`Analysis.merge_issues` says why they are not merged.
* ``WINDOW_FUNCTION``: window functions with ``PARTITION BY`` whose partition columns are view columns read
  straight from the one input (``key_trace.py``): the partitions the input's changes touch are recomputed.
* ``PARTITION_OVERWRITE``: a query over one input whose view columns include input columns that every GROUP BY
  and PARTITION BY keeps (``key_trace.py``); whether the view is partitioned by them, and its input too, is
  known at refresh time (``refresh.py``).
Everything else is an :class:`Issue` with the reason (``AGGREGATE_NOT_TOP_NODE``, ``NON_DETERMINISTIC``,
``UDF``, ``INPUT_NOT_DELTA``, ``OPERATOR_NOT_SUPPORTED``, ``WINDOW_WITHOUT_PARTITION_BY``, ...).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from framework.incremental.key_trace import trace
from framework.incremental.plan_tree import PlanNode as _Node
from framework.incremental.plan_tree import plan_tree as _tree

APPEND_ONLY = "APPEND_ONLY"
GROUP_AGGREGATE = "GROUP_AGGREGATE"
COMPLETE_RECOMPUTE = "COMPLETE_RECOMPUTE"
ROW_BASED = "ROW_BASED"
PARTITION_OVERWRITE = "PARTITION_OVERWRITE"
WINDOW_FUNCTION = "WINDOW_FUNCTION"

_PASS = frozenset({"Project", "Filter", "SubqueryAlias", "View", "Union", "Generate"})
_RELATIONS = frozenset({"LogicalRelation", "DataSourceV2Relation", "DataSourceV2ScanRelation"})
_NOT_DELTA = frozenset({"LocalRelation", "Range", "LogicalRDD", "OneRowRelation", "ExternalRDD",
                        "StreamingRelation", "StreamingRelationV2", "StreamingDataSourceV2Relation"})
_NON_DETERMINISTIC = frozenset({
    "Rand", "Randn", "Uuid", "Shuffle", "MonotonicallyIncreasingID", "SparkPartitionID", "InputFileName",
    "InputFileBlockStart", "InputFileBlockLength", "CurrentTimestamp", "CurrentDate", "Now", "LocalTimestamp",
    "CurrentBatchTimestamp", "RandStr", "Uniform", "RandomPoisson", "CurrentTimeZone", "CurrentTime"})
_FIXED_SIDE = {"LeftOuter": 1, "LeftSemi": 1, "LeftAnti": 1, "RightOuter": 0}  # the side that must not change
_MERGEABLE = {"Count": "count", "Sum": "sum", "Min": "min", "Max": "max"}
_NUMBERED_VIEW = re.compile(r"__live_sql_\d+")  # framework/sql/query.py names each query's temp views anew
_UNSTABLE_FIELDS = frozenset({"exprId", "jvmId", "resultId", "qualifier", "nullable", "metadata", "seed", "createTime",
                              "lastAccessTime"})  # a temp view of a SQL query: created anew per query


@dataclass(frozen=True)
class Issue:
    """Why a technique does not apply (``issue_type`` as Databricks' ``incrementalization_issues`` name it)."""

    issue_type: str
    reason: str

    def as_event(self) -> dict[str, Any]:
        """The issue as the ``planning_information`` event shows it."""
        return {"issue_type": self.issue_type, "prevent_incrementalization": True, "reason": self.reason}


@dataclass(frozen=True)
class OutputColumn:
    """One output column of a group aggregate: a grouping key or a mergeable aggregate."""

    name: str
    kind: str  # key | count | sum | min | max


@dataclass(frozen=True)
class JoinKey:
    """An equality of the join condition between a column of the relation on the side a left, right, semi or
    anti join does not preserve (alone on that side) and a column of a relation on the side it preserves: the
    preserved rows whose key no changed row of the fixed relation has keep their join result (``join_terms.py``)."""

    preserved: int  # the preserved relation (the id of its first column)
    preserved_column: str
    fixed_column: str
    view_column: str | None = None  # the view column that is the preserved column as it is (if one is)


@dataclass(frozen=True)
class Analysis:
    """What the plan allows: the issues of each technique (none: it applies), and a group aggregate's columns."""

    issues: dict[str, tuple[Issue, ...]] = field(default_factory=dict)
    columns: tuple[OutputColumn, ...] = ()
    relations: int = 0
    fingerprint: str = ""
    group_keys: int = 0  # a group aggregate's GROUP BY columns
    keyed: tuple[tuple[str, str], ...] = ()  # key columns (view column, input column) of a keyed recompute
    merge_issues: tuple[Issue, ...] = ()  # what stops GROUP_AGGREGATE's merge (then it recomputes the groups)
    by_groups: bool = False  # GROUP_AGGREGATE can recompute the changed groups (its keys are input columns)
    relation_ids: tuple[int, ...] = ()  # each relation's first column id, in plan order
    fixed: dict[int, str] = field(default_factory=dict)  # ROW_BASED: relations that must not change (join type)
    fixed_keys: dict[int, JoinKey] = field(default_factory=dict)  # ... unless keyed by the preserved side

    def applicable(self, technique: str) -> bool:
        """Whether ``technique`` can refresh the view."""
        return not self.issues.get(technique)

    @property
    def keys(self) -> tuple[str, ...]:
        """A group aggregate's grouping columns."""
        return tuple(c.name for c in self.columns if c.kind == "key")


def _expressions(node: _Node) -> list[list[dict[str, Any]]]:
    """Every expression of a plan node, each as its pre-order list of expression nodes."""
    found: list[list[dict[str, Any]]] = []
    for value in node.fields.values():
        if isinstance(value, list) and value and isinstance(value[0], dict) and "class" in value[0]:
            found.append(value)
        elif isinstance(value, list):
            found.extend(v for v in value if isinstance(v, list) and v and isinstance(v[0], dict) and "class" in v[0])
    return found


def _short(expr: dict[str, Any]) -> str:
    return str(expr.get("class", "")).rsplit(".", 1)[-1]


def analyze(plan: list[dict[str, Any]]) -> Analysis:
    """The techniques the analyzed plan (Catalyst's ``toJSON``, parsed) allows, and why not the others."""
    root, _ = _tree(plan)
    general = _expression_issues(root)
    top = _below_renames(root)
    relations = _count_relations(root)
    group_keys = 0
    append: tuple[Issue, ...]
    group: tuple[Issue, ...]
    if top.cls == "Aggregate":
        group_keys = len(top.fields.get("groupingExpressions") or [])
        columns, agg_issues = _aggregate(top, root)
        shape = _shape_issues(top.children[0])
        append = (Issue("AGGREGATE_IN_QUERY",
                        "an aggregate's rows change when its input grows: APPEND_ONLY needs a filter/projection"),)
        group = (*general, *shape, *agg_issues)
    else:
        columns = ()
        shape = _shape_issues(root)
        append = (*general, *shape)
        group = (Issue("NO_GROUP_AGGREGATE", "the query has no GROUP BY aggregate at its top"),)
    keys = trace(plan)
    keyed = (*general, *(Issue(t, r) for t, r in keys.issues))
    window = keyed if _has(root, "Window") else (Issue("NO_WINDOW", "the query has no window function"),)
    by_groups = top.cls == "Aggregate" and bool(keys.columns) and \
        all(i.issue_type == "INPUT_NOT_DELTA" for i in keyed)  # the changed groups can be recomputed
    issues = {APPEND_ONLY: tuple(append), GROUP_AGGREGATE: tuple(dict.fromkeys(keyed)) if by_groups else tuple(group),
              ROW_BASED: _row_based(root, top, general), WINDOW_FUNCTION: tuple(dict.fromkeys(window)),
              PARTITION_OVERWRITE: tuple(dict.fromkeys(keyed))}
    return Analysis(issues, columns, relations, fingerprint(plan), group_keys, keys.columns,
                    tuple(group) if top.cls == "Aggregate" else (), by_groups, _relation_ids(root), _fixed(root),
                    _view_keyed(root, _fixed_keys(root)))


def fingerprint(plan: list[dict[str, Any]]) -> str:
    """A digest of the plan without its per-run ids, paths, nullability and how each input is read: equal for
    the same query over the same columns, different when the query or its inputs' columns change."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in sorted(value.items()) if k not in _UNSTABLE_FIELDS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return _NUMBERED_VIEW.sub("__live_sql", value) if isinstance(value, str) else value

    nodes = [_as_relation(n) if _short(n) in _RELATIONS else n for n in plan]
    return hashlib.sha256(json.dumps(strip(nodes), sort_keys=True).encode()).hexdigest()[:16]


def _as_relation(node: dict[str, Any]) -> dict[str, Any]:
    """A relation by its columns only: the same input read through Delta, as its live Parquet files or as only
    its appended files (a refresh's three reads) is one input to the fingerprint."""
    return {"class": "Relation", "num-children": 0, "output": node.get("output")}


def _below_renames(node: _Node) -> _Node:
    """The node under SubqueryAlias / View wrappers and Projects that only pass or rename columns."""
    while node.cls in ("SubqueryAlias", "View") or (node.cls == "Project" and _only_renames(node)):
        node = node.children[0]
    return node


def _only_renames(node: _Node) -> bool:
    for expr in node.fields.get("projectList") or []:
        classes = [_short(e) for e in expr]
        if classes not in (["AttributeReference"], ["Alias", "AttributeReference"]):
            return False
    return True


def _count_relations(node: _Node) -> int:
    return (1 if node.cls in _RELATIONS else 0) + sum(_count_relations(c) for c in node.children)


def _expression_issues(node: _Node) -> list[Issue]:
    """Non-deterministic expressions and UDFs anywhere in the plan."""
    issues: list[Issue] = []
    for expr in _expressions(node):
        for e in expr:
            name = _short(e)
            if "UDF" in name or "UDAF" in name or "UDTF" in name:
                issues.append(Issue("UDF", f"the user-defined function in the query ({name}) may not be "
                                           "deterministic"))
            elif name in _NON_DETERMINISTIC:
                issues.append(Issue("NON_DETERMINISTIC", f"the non-deterministic expression {name}"))
    for child in node.children:
        issues.extend(i for i in _expression_issues(child) if i not in issues)
    return list(dict.fromkeys(issues))


def _shape_issues(node: _Node) -> list[Issue]:
    """What stops a subtree from being a filter/projection over the inputs (its rows one input row each)."""
    issues: list[Issue] = []
    if node.cls in _RELATIONS:
        return issues
    if node.cls in _NOT_DELTA:
        return [Issue("INPUT_NOT_DELTA", f"an input is not a Delta table of the pipeline ({node.cls})")]
    if node.cls == "Aggregate":
        issues.append(Issue("AGGREGATE_NOT_TOP_NODE", "an aggregate below the top of the query"))
    elif node.cls == "Window":
        issues.append(_window_issue(node))
    elif node.cls == "Join":
        issues.append(Issue("JOIN_IN_QUERY", "a join: an input's new rows also join the other inputs' old rows "
                                             "(ROW_BASED)"))
    elif node.cls not in _PASS:
        issues.append(Issue("OPERATOR_NOT_SUPPORTED", f"the operator {node.cls}"))
    for child in node.children:
        issues.extend(i for i in _shape_issues(child) if i not in issues)
    return issues


def _row_based(root: _Node, top: _Node, general: list[Issue]) -> tuple[Issue, ...]:
    """``ROW_BASED``: inner joins under filters and projections (no UNION, no aggregate): the query is linear in
    each of its inputs, so its new rows are the sum over the inputs of the query with that input's appended rows,
    the inputs read before it as they were and those after it as they are now. Left, right, semi and anti joins
    too: the query is linear in the side they preserve; a change on the other side (:func:`_fixed`) needs a
    join key (:func:`_fixed_keys`; checked at refresh time: ``feed.py``, ``join_keyed.py``)."""
    if top.cls == "Aggregate":
        return (Issue("AGGREGATE_IN_QUERY", "an aggregate over a join is not refreshed row by row here"),)
    if not _has(root, "Join"):  # still linear: ROW_BASED's signed rule after updates and deletes (planner.py)
        return tuple(dict.fromkeys((Issue("NO_JOIN", "the query has no join: APPEND_ONLY applies to a "
                                                     "filter/projection while its input is appended to"),
                                    *general, *_join_shape_issues(root))))
    return tuple(dict.fromkeys((*general, *_join_shape_issues(root))))


def _has(node: _Node, cls: str) -> bool:
    return node.cls == cls or any(_has(c, cls) for c in node.children)


def _join_shape_issues(node: _Node) -> list[Issue]:
    issues: list[Issue] = []
    if node.cls in _RELATIONS:
        return issues
    if node.cls == "Join":
        kind = _join_type(node)
        if kind not in ("Inner", "Cross", *_FIXED_SIDE):
            issues.append(Issue("JOIN_TYPE_NOT_SUPPORTED", f"a {kind} join: an input's new rows can change rows "
                                                           "the view holds (only inner, left, right, semi and "
                                                           "anti joins are row-based here)"))
    elif node.cls == "Union":
        issues.append(Issue("OPERATOR_NOT_SUPPORTED", "a UNION in a query with a join"))
    elif node.cls not in _PASS:
        issues.extend(_shape_issues(node)[:1])
        return issues
    for child in node.children:
        issues.extend(i for i in _join_shape_issues(child) if i not in issues)
    return issues


def _fixed(node: _Node) -> dict[int, str]:
    """The relations on a join's side that must not change for ``ROW_BASED`` (by the id of their first column),
    with the join's type: a left join's right side (its rows decide which left rows are padded with NULLs), a
    right join's left side, a semi or anti join's right side. The query is linear in every other input."""
    found: dict[int, str] = {}
    if node.cls == "Join" and _join_type(node) in _FIXED_SIDE:
        found.update({i: _join_type(node) for i in _relation_ids(node.children[_FIXED_SIDE[_join_type(node)]])})
    for child in node.children:
        found.update({i: k for i, k in _fixed(child).items() if i not in found})
    return found


def _fixed_keys(node: _Node) -> dict[int, JoinKey]:
    """For each join whose non-preserved side is one relation, that relation's first equality of a column of it
    with a column of a relation on the preserved side (``=`` or ``<=>`` between columns or renamed columns, a
    conjunct of the join condition)."""
    found: dict[int, JoinKey] = {}
    kind = _join_type(node) if node.cls == "Join" else ""
    if kind in _FIXED_SIDE and len(_relation_ids(node.children[_FIXED_SIDE[kind]])) == 1:
        fixed_side = _origins(node.children[_FIXED_SIDE[kind]])
        preserved = _origins(node.children[1 - _FIXED_SIDE[kind]])
        for left, right in _equalities(node.fields.get("condition") or []):
            for mine, other in ((left, right), (right, left)):
                if mine in fixed_side and other in preserved and fixed_side[mine][0] not in found:
                    found[fixed_side[mine][0]] = JoinKey(*preserved[other], fixed_side[mine][1])
    for child in node.children:
        found.update({i: k for i, k in _fixed_keys(child).items() if i not in found})
    return found


def _view_keyed(root: _Node, keys: dict[int, JoinKey]) -> dict[int, JoinKey]:
    """The join keys with the view column that outputs their preserved column unchanged, where one does."""
    origins = _origins(root)
    columns: dict[tuple[int, str], str] = {}
    for expr_id, name in _output(root):
        if expr_id in origins:
            columns.setdefault(origins[expr_id], name)
    return {i: replace(k, view_column=columns.get((k.preserved, k.preserved_column))) for i, k in keys.items()}


def _output(node: _Node) -> list[tuple[int, str]]:
    """The node's output columns (id, name) through projections, filters and joins."""
    if node.cls in _RELATIONS:
        return [(int(c[0]["exprId"]["id"]), str(c[0]["name"])) for c in node.fields.get("output") or [] if c]
    if node.cls == "Project":
        return [(int(e[0]["exprId"]["id"]), str(e[0]["name"])) for e in node.fields.get("projectList") or []
                if e and "exprId" in e[0]]
    if node.cls == "Join":
        semi = _join_type(node) in ("LeftSemi", "LeftAnti")
        return [c for child in node.children[:1 if semi else 2] for c in _output(child)]
    return _output(node.children[0]) if node.children else []


def _origins(node: _Node) -> dict[int, tuple[int, str]]:
    """The columns of the subtree that are a relation's column, passed on or renamed: by their id, the relation
    (the id of its first column) and the column's name there."""
    if node.cls in _RELATIONS:
        relation = _relation_ids(node)
        return {int(c[0]["exprId"]["id"]): (relation[0], str(c[0]["name"]))
                for c in node.fields.get("output") or [] if c and relation}
    found = {k: v for child in node.children for k, v in _origins(child).items()}
    if node.cls == "Project":
        for expr in node.fields.get("projectList") or []:
            if [_short(e) for e in expr] == ["Alias", "AttributeReference"] and int(expr[1]["exprId"]["id"]) in found:
                found[int(expr[0]["exprId"]["id"])] = found[int(expr[1]["exprId"]["id"])]
    return found


def _equalities(condition: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """The ``a = b`` and ``a <=> b`` conjuncts of a join condition between plain columns, as their ids."""
    if not condition:
        return []
    found: list[tuple[int, int]] = []
    pending = [_tree(condition)[0]]
    while pending:
        expr = pending.pop(0)
        if expr.cls == "And":
            pending.extend(expr.children)
        elif expr.cls in ("EqualTo", "EqualNullSafe") and all(c.cls == "AttributeReference" for c in expr.children):
            found.append((int(expr.children[0].fields["exprId"]["id"]), int(expr.children[1].fields["exprId"]["id"])))
    return found


def _relation_ids(node: _Node) -> tuple[int, ...]:
    """The id of each relation's first column, in plan order."""
    if node.cls in _RELATIONS:
        output = node.fields.get("output") or []
        return (int(output[0][0]["exprId"]["id"]),) if output and output[0] else ()
    return tuple(i for child in node.children for i in _relation_ids(child))


def _join_type(node: _Node) -> str:
    """The join's type as Catalyst names it (``Inner``, ``LeftOuter``, ...)."""
    found = node.fields.get("joinType")
    name = found.get("object", "") if isinstance(found, dict) else str(found or "")
    return name.rsplit(".", 1)[-1].rstrip("$") or "unknown"


def _window_issue(node: _Node) -> Issue:
    for expr in _expressions(node):
        for e in expr:
            if _short(e) == "WindowSpecDefinition" and not e.get("partitionSpec"):
                return Issue("WINDOW_WITHOUT_PARTITION_BY", "a window function without PARTITION BY")
    return Issue("WINDOW_IN_QUERY", "a window function: its rows change when their partition grows "
                                    "(WINDOW_FUNCTION)")


def _aggregate(node: _Node, root: _Node) -> tuple[tuple[OutputColumn, ...], list[Issue]]:
    """A top Aggregate's output columns (renamed by the Projects above it) and what stops merging them."""
    issues: list[Issue] = []
    grouping = list(node.fields.get("groupingExpressions") or [])
    keys: set[int] = set()
    for g in grouping:
        if len(g) != 1 or _short(g[0]) != "AttributeReference":
            issues.append(Issue("GROUPING_EXPRESSION", "a GROUP BY expression that is not a column"))
        else:
            keys.add(int(g[0]["exprId"]["id"]))
    by_id: dict[int, OutputColumn] = {}
    for expr in node.fields.get("aggregateExpressions") or []:
        column, issue = _output_column(expr, keys)
        if issue is not None:
            issues.append(issue)
        elif column is not None:
            by_id[int(expr[0]["exprId"]["id"])] = column
    return _renamed(root, node, by_id), issues


def _output_column(expr: list[dict[str, Any]], keys: set[int]) -> tuple[OutputColumn | None, Issue | None]:
    """One of an Aggregate's ``aggregateExpressions`` as a key or a mergeable aggregate, or why it is not one."""
    classes = [_short(e) for e in expr]
    head = expr[0]
    if classes[0] == "AttributeReference":
        return (OutputColumn(str(head["name"]), "key"), None) if int(head["exprId"]["id"]) in keys else \
            (None, Issue("GROUPING_EXPRESSION", f"the column {head['name']} is not grouped"))
    if classes[:2] == ["Alias", "AttributeReference"] and int(expr[1]["exprId"]["id"]) in keys:
        return OutputColumn(str(head["name"]), "key"), None
    if classes[0] == "Alias" and len(classes) > 2 and classes[1] == "AggregateExpression":
        function = classes[2]
        if expr[1].get("isDistinct"):
            return None, Issue("AGGREGATE_NOT_SUPPORTED", f"{function.lower()}(DISTINCT ...) is not kept per group")
        if expr[1].get("filter") not in (None, [], "None"):
            return None, Issue("AGGREGATE_NOT_SUPPORTED", f"{function.lower()}(...) FILTER (WHERE ...)")
        if function in _MERGEABLE:
            return OutputColumn(str(head["name"]), _MERGEABLE[function]), None
        return None, Issue("AGGREGATE_NOT_SUPPORTED",
                           f"the aggregate {function} cannot be merged from its groups' previous values")
    return None, Issue("AGGREGATE_NOT_SUPPORTED", f"the output {head.get('name', classes[0])} is an expression over "
                                                  "aggregates")


def _renamed(root: _Node, aggregate: _Node, by_id: dict[int, OutputColumn]) -> tuple[OutputColumn, ...]:
    """The aggregate's columns as the query outputs them, through the renaming Projects above it."""
    chain: list[_Node] = []
    node = root
    while node is not aggregate:
        chain.append(node)
        node = node.children[0]
    current = dict(by_id)
    for project in reversed(chain):
        if project.cls != "Project":
            continue
        renamed: dict[int, OutputColumn] = {}
        for expr in project.fields.get("projectList") or []:
            source = current.get(int(expr[-1]["exprId"]["id"]))
            if source is not None:
                renamed[int(expr[0]["exprId"]["id"])] = OutputColumn(str(expr[0]["name"]), source.kind)
        current = renamed
    return tuple(current.values())

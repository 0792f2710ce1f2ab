"""An analyzed plan (``plan_json.analyzed_plan``: Catalyst's pre-order list of nodes) as a tree, for the pure
Python analyses of ``analysis.py`` and ``key_trace.py``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class PlanNode:
    """One plan node: its short class name (``Project``, ``Aggregate``, ...), its JSON fields, its children."""

    cls: str
    fields: dict[str, Any]
    children: list[PlanNode]


def plan_tree(nodes: list[dict[str, Any]], at: int = 0) -> tuple[PlanNode, int]:
    """The subtree whose root is ``nodes[at]``, and the index after its last node."""
    node, nxt, children = nodes[at], at + 1, []
    for _ in range(int(node.get("num-children", 0))):
        child, nxt = plan_tree(nodes, nxt)
        children.append(child)
    return PlanNode(str(node["class"]).rsplit(".", 1)[-1], node, children), nxt

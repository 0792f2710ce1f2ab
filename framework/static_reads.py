"""Find the reads of each flow without running Spark, from the query functions' source code.

Used by ``medallion validate`` / ``graph`` (fast, no JVM). Literal names only: reads built from variables are
found by the runner's resolution pass, which calls the query functions with Spark.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Callable
from typing import Any

from framework.graph import Read
from framework.registry import Registry

_LIVE_IN_SQL = re.compile(r"\b(?:LIVE|live)\.`?(\w+)`?")
_STREAM_IN_SQL = re.compile(r"\bSTREAM\s*\(\s*(?:LIVE\.)?`?(\w+)`?\s*\)", re.IGNORECASE)


def static_reads(registry: Registry) -> tuple[dict[str, list[Read]], dict[str, bool]]:
    """Return (flow -> reads, flow -> is streaming) from the source of every query function."""
    reads: dict[str, list[Read]] = {}
    streaming: dict[str, bool] = {}
    for key, flow in registry.flows.items():
        if flow.query_function is None:
            reads[key] = []
            streaming[key] = not flow.once
            continue
        found, is_stream = _function_reads(flow.query_function)
        reads[key] = found
        streaming[key] = is_stream
    return reads, streaming


def _function_reads(fn: Callable[..., Any]) -> tuple[list[Read], bool]:
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return [], False
    reads: list[Read] = []
    streaming = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in {"readStream", "read_stream"}:
            streaming = True
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name = _literal(node.args[0]) if node.args else None
        attr = node.func.attr
        owner = _dotted(node.func.value)
        if attr in {"read", "read_stream", "readStream"} and owner in {"dlt", "dp"} and name:
            stream = attr != "read"
            reads.append(Read(name, stream, via_live=True))
            streaming |= stream
        elif attr == "table" and name and "readStream" in owner.split("."):
            reads.append(Read(name, True, via_live=name.upper().startswith("LIVE.")))
            streaming = True
        elif attr == "table" and name and ("read" in owner.split(".") or owner == "spark"):
            reads.append(Read(name, False, via_live=name.upper().startswith("LIVE.")))
        elif attr == "sql" and name:
            for match in _STREAM_IN_SQL.finditer(name):
                reads.append(Read(match.group(1), True, via_live=True))
                streaming = True
            for match in _LIVE_IN_SQL.finditer(name):
                if not any(r.name == match.group(1) for r in reads):
                    reads.append(Read(match.group(1), False, via_live=True))
    return reads, streaming


def _literal(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    return ""

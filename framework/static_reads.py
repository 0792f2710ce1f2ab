"""Find the reads of each flow without running Spark, from the query functions' source code.

Used by ``medallion validate`` / ``graph`` (fast, no JVM). Literal names only: reads built from variables are
found by the runner's resolution pass, which calls the query functions with Spark.

The query functions of SQL datasets and flows (``framework.sql``) are not read as Python: they carry what the SQL
statement reads, found when it was registered, as ``__medallion_sql_reads__`` (a list of ``(name, streaming)``),
and may say whether the query streams without reading a dataset (``STREAM read_files(...)``) as
``__medallion_sql_streaming__``.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Callable
from typing import Any

from framework.graph import NameResolver, Read
from framework.registry import Registry

_LIVE_IN_SQL = re.compile(r"\b(?:LIVE|live)\.`?(\w+)`?")
_STREAM_IN_SQL = re.compile(r"\bSTREAM\s*\(\s*(?:LIVE\.)?`?(\w+)`?\s*\)", re.IGNORECASE)
SQL_READS_ATTRIBUTE = "__medallion_sql_reads__"
SQL_STREAMING_ATTRIBUTE = "__medallion_sql_streaming__"


def static_reads(registry: Registry) -> tuple[dict[str, list[Read]], dict[str, bool]]:
    """Return (flow -> reads, flow -> is streaming) from the source of every query function."""
    reads: dict[str, list[Read]] = {}
    streaming: dict[str, bool] = {}
    for key, flow in registry.flows.items():
        if flow.query_function is None:
            reads[key] = []
            streaming[key] = not flow.once
            continue
        sql_reads = _sql_reads(flow.query_function)
        found, is_stream = sql_reads if sql_reads is not None else _function_reads(flow.query_function)
        reads[key] = found
        streaming[key] = is_stream
    return reads, streaming


def _sql_reads(fn: Callable[..., Any]) -> tuple[list[Read], bool] | None:
    """The reads a SQL query function carries (None for a Python one). A name is a pipeline dataset for sure
    when written ``LIVE.x``; a bare or qualified name may be an external table, as with ``spark.read.table``."""
    found = getattr(fn, SQL_READS_ATTRIBUTE, None)
    if found is None:
        return None
    reads = [Read(name, bool(streaming), via_live=NameResolver.is_live(name)) for name, streaming in found]
    streaming = getattr(fn, SQL_STREAMING_ATTRIBUTE, None)
    return reads, (bool(streaming) if streaming is not None else any(read.streaming for read in reads))


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

"""Find the reads of each flow without running Spark, from the query functions' source code.

Used by ``medallion validate`` / ``graph`` (fast, no JVM). Literal names only: reads built from variables are
found by the runner's resolution pass, which calls the query functions with Spark.

The query functions of SQL datasets and flows (``framework.sql``) are not read as Python: they carry what the SQL
statement reads, found when it was registered, as ``__medallion_sql_reads__`` (a list of ``(name, streaming)``),
may say whether the query streams without reading a dataset (``STREAM read_files(...)``) as
``__medallion_sql_streaming__``, and carry their statement and query as ``__medallion_sql_query__``.

:func:`static_problems` is what ``validate --static`` checks beyond the graph, without Spark: the syntax mistakes
a SQL query's tokens show (``framework/sql/lint.py``), and reads of tables that are neither datasets of the
pipeline nor in the spec's ``tables:`` (without a session there is no catalog to find them in).
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from collections.abc import Callable, Iterable
from typing import Any

from framework.errors import Problem
from framework.graph import NameResolver, Read, split_name
from framework.registry import Registry

_LIVE_IN_SQL = re.compile(r"\b(?:LIVE|live)\.`?(\w+)`?")
_STREAM_IN_SQL = re.compile(r"\bSTREAM\s*\(\s*(?:LIVE\.)?`?(\w+)`?\s*\)", re.IGNORECASE)
SQL_READS_ATTRIBUTE = "__medallion_sql_reads__"
SQL_STREAMING_ATTRIBUTE = "__medallion_sql_streaming__"
SQL_QUERY_ATTRIBUTE = "__medallion_sql_query__"


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


def sql_syntax_problems(registry: Registry) -> list[Problem]:
    """``SQL_PARSE_ERROR`` for each syntax mistake the tokens of a SQL dataset's or flow's query show, at its file
    and line (the column in the message)."""
    from framework.sql.lint import syntax_problems

    problems: list[Problem] = []
    for flow in registry.flows.values():
        found = getattr(flow.query_function, SQL_QUERY_ATTRIBUTE, None)
        if found is None:
            continue
        statement, query = found
        for offset, message in syntax_problems(query.text):
            line, column = statement.position(query.offset + offset)
            problems.append(Problem("SQL_PARSE_ERROR", f"dataset '{flow.target}', column {column}: {message}",
                                    statement.file, line))
    return problems


def unknown_tables(registry: Registry, reads: dict[str, list[Read]], known: Iterable[str], *, schema: str,
                   catalog: str | None = None) -> list[Problem]:
    """``UNRESOLVED_TABLE`` for each read (``reads``: :func:`static_reads`', plus APPLY CHANGES sources) of a
    table that is not a dataset of the pipeline and not one of ``known`` (the spec's ``tables:``,
    ``schema.table`` or ``catalog.schema.table``); a bare name is looked for in ``schema``. ``LIVE.`` names are
    the graph's to report, and direct file queries (``json.`/path` ``) are not tables."""
    resolver = NameResolver(frozenset(registry.datasets), schema, catalog)
    tables = {_table_key(name, schema) for name in known}
    problems: list[Problem] = []
    for key, flow in registry.flows.items():
        names = [r.name for r in reads.get(key, [])]
        names += [s for s in (flow.cdc.source if flow.cdc else None,
                              flow.snapshot_cdc.source if flow.snapshot_cdc else None) if isinstance(s, str)]
        for name in dict.fromkeys(names):
            if NameResolver.is_live(name) or resolver.internal(name) is not None or "/" in name \
                    or _table_key(name, schema) in tables:
                continue
            problems.append(Problem(
                "UNRESOLVED_TABLE",
                f"flow '{flow.name}' reads '{name}', which is neither a dataset of this pipeline nor a table in "
                "the spec's `tables:`. Declare it there (the framework then creates it locally), or check it "
                "against the session's catalog with `medallion validate` without --static.",
                flow.location.file, flow.location.line))
    return problems


def _table_key(name: str, schema: str) -> tuple[str, str]:
    """``(schema, table)`` of a table name, lower case; the catalog of a three-part name is left out."""
    parts = [p.strip("`").lower() for p in split_name(name)]
    return (parts[-2] if len(parts) > 1 else schema.lower(), parts[-1])

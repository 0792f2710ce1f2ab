"""Checking SQL boolean constraints: a cheap lexical check, Spark's own parser, and analysis against a schema.

Three levels, from cheapest to most thorough:

1. :func:`lexical_problems` — pure Python, no JVM: empty text, unterminated quotes, unbalanced parentheses,
   statement separators, a dangling operator. Runs whenever a rule file is loaded, also on Databricks.
2. :func:`parse_problem` — Spark's SQL parser (``CatalystSqlParser.parseExpression``). Uses the JVM of the
   running SparkContext when there is one; otherwise it launches a bare py4j gateway JVM (no SparkContext,
   no SparkSession) once per process, so a rule file can be validated without starting Spark.
3. :func:`analysis_problem` — resolves the constraint against a schema on an empty DataFrame (analysis only,
   no Spark job): unknown columns, unknown functions, type errors, non-boolean results.
"""

from __future__ import annotations

import atexit
import logging
import re
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from framework import internals
from framework.stand_ins import empty_frame

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

_BINARY_TAIL = re.compile(r"(?:[=<>!+\-*/%&|^]|\b(?:AND|OR|NOT|IN|IS|LIKE|RLIKE|REGEXP|BETWEEN))\s*$", re.I)
_BINARY_HEAD = re.compile(r"^\s*(?:[=<>*/%&|^]|\b(?:AND|OR|IS|IN|LIKE|RLIKE|BETWEEN)\b)", re.I)
_STATEMENT_HEAD = re.compile(r"^\s*(?:SELECT|INSERT|UPDATE|DELETE|DROP|CREATE|ALTER|MERGE|WITH)\b", re.I)


def lexical_problems(sql: str) -> list[str]:
    """Return what is obviously wrong with a constraint, without any JVM (empty list when nothing is).

    Args:
        sql: a SQL boolean expression such as ``"amount > 0 AND currency IN ('EUR', 'USD')"``.

    Returns:
        Human-readable problems; this check never claims a constraint is valid, only finds clear mistakes.
    """
    text = sql.strip()
    if not text:
        return ["the constraint is empty"]
    problems: list[str] = []
    depth = 0
    quote: str | None = None
    i = 0
    outside: list[str] = []  # the text with quoted parts as 0s, for keyword checks
    while i < len(text):
        ch = text[i]
        if quote is not None:
            if ch == "\\" and quote != "`":
                i += 2
                outside.append("00")
                continue
            if ch == quote:
                quote = None
            outside.append("0")
        elif ch in "'\"`":
            quote = ch
            outside.append("0")
        else:
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth < 0:
                    problems.append(f"unexpected ')' at position {i + 1}")
                    depth = 0
            elif ch == ";":
                problems.append("a constraint is one expression: remove ';'")
            outside.append(ch)
        i += 1
    if quote is not None:
        kind = "identifier quote (`)" if quote == "`" else f"string quote ({quote})"
        problems.append(f"unterminated {kind}")
    if depth > 0:
        problems.append(f"{depth} unclosed '('")
    bare = "".join(outside)
    if _STATEMENT_HEAD.match(bare):
        problems.append("a constraint is a boolean expression, not a SQL statement")
    elif _BINARY_TAIL.search(bare):
        problems.append("the constraint ends with an operator")
    elif _BINARY_HEAD.match(bare):
        problems.append("the constraint starts with an operator")
    return problems


@dataclass
class _Gateway:
    jvm: Any
    gateway: Any | None  # owned gateway (shut down at exit), None when borrowed from a SparkContext


_lock = threading.Lock()
_own_gateway: _Gateway | None = None


def _jvm(launch: bool) -> Any | None:
    """The JVM view of the active SparkContext, else (when ``launch``) of a bare gateway launched once."""
    global _own_gateway
    active = internals.active_jvm()
    if active is not None:
        return active
    if not launch:
        return None
    with _lock:
        if _own_gateway is None:
            from pyspark.conf import SparkConf
            from pyspark.java_gateway import launch_gateway

            conf = SparkConf(loadDefaults=False)
            conf.set("spark.driver.memory", "256m")
            gateway = launch_gateway(conf)
            _own_gateway = _Gateway(gateway.jvm, gateway)
            atexit.register(_shutdown_gateway)
        return _own_gateway.jvm


def _shutdown_gateway() -> None:
    global _own_gateway
    if _own_gateway is not None and _own_gateway.gateway is not None:
        with suppress(Exception):
            _own_gateway.gateway.shutdown()
    _own_gateway = None


def parse_problem(sql: str, *, launch: bool = True) -> str | None:
    """Parse ``sql`` with Spark's expression parser; return the syntax error, or None when it parses.

    Args:
        sql: a SQL boolean expression.
        launch: start a bare parser JVM when no SparkContext is running (no SparkSession is created).
            With ``launch=False`` and no SparkContext, only the lexical check runs.

    Returns:
        The first line of Spark's ``PARSE_SYNTAX_ERROR`` message with the position, or None.
    """
    lexical = lexical_problems(sql)
    jvm = _jvm(launch)
    if jvm is None:
        return "; ".join(lexical) or None
    if sql in _parsed_ok:
        return None
    from py4j.protocol import Py4JJavaError

    parser = getattr(getattr(jvm.org.apache.spark.sql.catalyst.parser, "CatalystSqlParser$"), "MODULE$")
    try:
        with quiet_spark_errors():
            parser.parseExpression(sql)
    except Py4JJavaError as error:
        return _first_line(str(error.java_exception.getMessage()))
    except Exception as error:
        return _first_line(str(error))
    _parsed_ok.add(sql)
    return None


# What parsed, and what resolved to a boolean against a schema, once: the same answer every time after (a warm
# session validates the same rules against the same schemas at every update; each answer is a py4j round trip
# and an analysis). Failures are not kept: a function registered later may make them resolve.
_parsed_ok: set[str] = set()
_resolved_ok: weakref.WeakKeyDictionary[Any, set[tuple[str, str]]] = weakref.WeakKeyDictionary()
_empty_frames: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def analysis_problem(spark: SparkSession, sql: str, schema: StructType) -> tuple[str, str] | None:
    """Resolve ``sql`` against ``schema`` (analysis only, no job); return ``(code, message)`` or None.

    Codes: ``UNKNOWN_COLUMN`` (with Spark's suggestion), ``CONSTRAINT_SYNTAX``, ``CONSTRAINT_NOT_BOOLEAN``,
    ``CONSTRAINT_INVALID`` (unknown function, type mismatch, ...).
    """
    from pyspark.errors import AnalysisException, ParseException
    from pyspark.sql.types import BooleanType, NullType

    schema_json = schema.json()
    resolved_ok = _resolved_ok.setdefault(spark, set())
    if (schema_json, sql) in resolved_ok:
        return None
    frames = _empty_frames.setdefault(spark, {})
    empty = frames.get(schema_json)
    if empty is None:
        empty = frames[schema_json] = empty_frame(spark, schema)
    try:
        with quiet_spark_errors():
            resolved = empty.selectExpr(sql).schema
    except ParseException as error:
        return "CONSTRAINT_SYNTAX", _first_line(str(error))
    except AnalysisException as error:
        condition = error.getCondition() or ""
        params = error.getMessageParameters() or {}
        if condition.startswith("UNRESOLVED_COLUMN"):
            message = f"unknown column {params.get('objectName', '?')}"
            if params.get("proposal"):
                message += f"; the dataset has {params['proposal']}"
            return "UNKNOWN_COLUMN", message
        return "CONSTRAINT_INVALID", _first_line(str(error))
    data_type = resolved.fields[0].dataType
    if not isinstance(data_type, BooleanType | NullType):
        return "CONSTRAINT_NOT_BOOLEAN", f"the constraint returns {data_type.simpleString()}, not boolean"
    resolved_ok.add((schema_json, sql))
    return None


@contextmanager
def quiet_spark_errors() -> Iterator[None]:
    """Silence pyspark's query-context error loggers while an expected error is raised and handled."""
    loggers = [logging.getLogger(n) for n in ("SQLQueryContextLogger", "DataFrameQueryContextLogger")]
    previous = [lg.disabled for lg in loggers]
    for lg in loggers:
        lg.disabled = True
    try:
        yield
    finally:
        for lg, was in zip(loggers, previous, strict=True):
            lg.disabled = was


def _first_line(message: str) -> str:
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    if not lines:
        return message
    head = lines[0]
    head = re.sub(r"\s*SQLSTATE: \w+", "", head)
    return head

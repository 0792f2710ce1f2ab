"""``_metadata`` of ``STREAM read_files(...)`` in a SQL query.

A file source's ``_metadata`` is a hidden column: Spark resolves it through a DataFrame's projections, but not
through a temporary view (its ``View`` node has no metadata output), and the SQL path reads every relation
through one. So when a query names ``_metadata``, the Auto Loader read's view carries it as a plain column,
and the query's result leaves it out again unless the query's own select list names it, as a ``SELECT *``
on Databricks never shows it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from framework import internals
from framework.sql.tokens import IDENT, WORD, tokenize

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

METADATA = "_metadata"
_THROUGH = {"Sort", "Filter", "GlobalLimit", "LocalLimit", "Distinct", "Offset", "UnresolvedHaving"}


def mentions_metadata(text: str) -> bool:
    """Whether the query text names ``_metadata`` (as a word outside strings and comments)."""
    return any(t.kind in (WORD, IDENT) and t.value.lower() == METADATA for t in tokenize(text))


def with_metadata(df: DataFrame) -> DataFrame:
    """A file read with its hidden ``_metadata`` as a plain column, for a view."""
    return df.select("*", METADATA) if METADATA not in df.columns else df


def without_metadata(spark: Any, text: str, df: DataFrame) -> DataFrame:
    """The query's result without the view's ``_metadata`` column, unless the select list names it."""
    if METADATA not in df.columns or _selects_metadata(spark, text):
        return df
    return df.drop(METADATA)


def _selects_metadata(spark: Any, text: str) -> bool:
    node = internals.parse_plan(spark, text)
    while node.nodeName() in _THROUGH and node.children().size() == 1:
        node = node.children().apply(0)
    if node.nodeName() not in ("Project", "Aggregate"):
        return False
    expressions = node.projectList() if node.nodeName() == "Project" else node.aggregateExpressions()
    for i in range(expressions.size()):
        expr = expressions.apply(i)
        if expr.getClass().getSimpleName() == "UnresolvedAttribute":
            parts = expr.nameParts()
            if str(parts.apply(parts.size() - 1)).lower() == METADATA:
                return True
    return False

"""Pipeline parameters (the spec's ``parameters``, Databricks' Beta feature) bound to ``:name`` markers in a
pipeline's SQL queries.

Spark binds named parameter markers itself (``spark.sql(text, args=...)``), but not in a session with Delta's
SQL extension (``DeltaSparkSessionExtension``, which every pipeline session has): with PySpark 4.2.0 and
delta-spark 4.4.1 the markers stay unbound (``UNBOUND_SQL_PARAMETER``). So each marker whose name is a
parameter is replaced by the value as a SQL string literal (parameter values are strings on Databricks too);
a marker with no such parameter is left for Spark, which names it. A ``:`` after an identifier, a closing
bracket or another ``:`` is not a marker (``col:path``, ``x::type``).
"""

from __future__ import annotations

from collections.abc import Mapping

from framework.sql.tokens import IDENT, NUMBER, PUNCT, STRING, WORD, tokenize

_NOT_BEFORE_A_MARKER = {IDENT, NUMBER, STRING}


def bind_parameters(text: str, parameters: Mapping[str, str]) -> str:
    """``text`` with every ``:name`` marker of a parameter replaced by its value as a string literal."""
    if not parameters or ":" not in text:
        return text
    tokens = tokenize(text)
    out, last = [], 0
    for i, token in enumerate(tokens[:-1]):
        name = tokens[i + 1]
        if not (token.kind == PUNCT and token.value == ":" and name.kind in (WORD, IDENT)
                and name.start == token.end and name.value in parameters):
            continue
        before = tokens[i - 1] if i else None
        if before is not None and before.end == token.start and (
                before.kind in _NOT_BEFORE_A_MARKER or before.kind == WORD or before.value in ":)]"):
            continue
        out.append(text[last:token.start])
        out.append(_literal(parameters[name.value]))
        last = name.end
    out.append(text[last:])
    return "".join(out)


def _literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"

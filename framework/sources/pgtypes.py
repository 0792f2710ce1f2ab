"""PostgreSQL column types (as ``pg_catalog.format_type`` prints them) → Spark and Arrow types (pure).

The mapping the issue asks for, as Spark's own JDBC reader does it where both have an answer: integers by width,
``numeric(p,s)`` as ``decimal(p,s)`` (``numeric`` without a precision as ``decimal(38,18)``), text types as
strings, ``timestamp`` and ``timestamptz`` as timestamps in UTC (sessions run in UTC), ``json``/``jsonb`` and
``uuid`` as strings, ``bytea`` as binary. Anything else is an error naming the column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from framework.sources.errors import UnsupportedColumnTypeError

_SIMPLE = {
    "smallint": "smallint", "integer": "int", "bigint": "bigint",
    "real": "float", "double precision": "double", "boolean": "boolean",
    "text": "string", "character varying": "string", "character": "string", "\"char\"": "string",
    "name": "string", "citext": "string", "json": "string", "jsonb": "string", "uuid": "string",
    "date": "date", "timestamp without time zone": "timestamp", "timestamp with time zone": "timestamp",
    "bytea": "binary",
}
# Read as text from the database and converted in Arrow: the driver hands these over in forms Spark does not
# take (numeric as an opaque string, uuid as 16 bytes, json as an extension type).
TEXT_CAST = frozenset({"numeric", "json", "jsonb", "uuid", "citext", "name", "\"char\""})
WATERMARK_KINDS = {"smallint": "number", "int": "number", "bigint": "number", "decimal": "number",
                   "date": "time", "timestamp": "time"}
_MODIFIER = re.compile(r"\(.*?\)")
_NUMERIC = re.compile(r"^numeric(?:\((\d+)(?:,\s*(-?\d+))?\))?$")


@dataclass(frozen=True)
class Column:
    """One column of the relation read: its name, its database type and its Spark type (DDL text)."""

    name: str
    db_type: str
    spark_type: str

    @property
    def base_type(self) -> str:
        """The database type without modifiers (``character varying(20)`` → ``character varying``)."""
        return _MODIFIER.sub("", self.db_type).strip()

    @property
    def read_as_text(self) -> bool:
        """True when the column is selected as ``::text`` and converted in Arrow."""
        return self.base_type in TEXT_CAST

    @property
    def quoted(self) -> str:
        """The column name as a SQL identifier."""
        return quote_ident(self.name)


def spark_type(name: str, db_type: str) -> str:
    """The Spark type (DDL text) of a column of ``db_type``.

    Raises:
        UnsupportedColumnTypeError: the type has no mapping (arrays, geometry, intervals, ...).
    """
    text = db_type.strip().lower()
    numeric = _NUMERIC.match(text)
    if numeric:
        precision, scale = numeric.group(1), numeric.group(2)
        if precision is None:
            return "decimal(38,18)"
        p, s = int(precision), int(scale or 0)
        if p > 38 or s < 0 or s > p:
            raise UnsupportedColumnTypeError(f"column '{name}' is {db_type}: Spark decimals hold at most 38 digits "
                                             "with a scale from 0 to the precision; cast it in a 'query'")
        return f"decimal({p},{s})"
    base = _MODIFIER.sub("", text).strip()
    if base in _SIMPLE and not text.endswith("[]"):
        return _SIMPLE[base]
    raise UnsupportedColumnTypeError(f"column '{name}' has the unsupported type {db_type}: cast it to a supported "
                                     "type in a 'query' option (integers, numeric, text, boolean, date, timestamp, "
                                     "json, uuid, bytea)")


def watermark_kind(column: Column) -> str:
    """``number`` or ``time``: what ``lookback`` must be for this watermark column.

    Raises:
        UnsupportedColumnTypeError: the column cannot order rows (text, boolean, json, ...).
    """
    kind = WATERMARK_KINDS.get(column.spark_type.split("(")[0])
    if kind is None:
        raise UnsupportedColumnTypeError(f"watermark column '{column.name}' is {column.db_type}: it must be a "
                                         "timestamp, date, integer or numeric column")
    return kind


def quote_ident(name: str) -> str:
    """``name`` as a PostgreSQL identifier (double quotes, inner quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    """``text`` as a PostgreSQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def ddl(columns: list[Column]) -> str:
    """The Spark schema of ``columns`` as DDL text (names in backquotes)."""
    return ", ".join(f"`{c.name.replace('`', '``')}` {c.spark_type}" for c in columns)

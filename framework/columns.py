"""Declared column lists: a dataset's ``schema=`` DDL string and the column list of SQL's ``CREATE ... TABLE``.

Spark's schema parser (``StructType.fromDDL``) reads names, types, ``NOT NULL`` and ``COMMENT`` only, while
Databricks' column definitions also take ``GENERATED ALWAYS AS (expr)`` and ``GENERATED {ALWAYS | BY DEFAULT}
AS IDENTITY [(START WITH s INCREMENT BY i)]``. Delta keeps both as column metadata
(``delta.generationExpression``, ``delta.identity.*``): a table created with that metadata computes the column
on every write that leaves it out (and checks a generated value a write supplies), whichever writer Spark uses.
So this module takes those clauses out of the text, leaves the rest to Spark's parser, and puts the clauses
back as the columns' metadata. ``DEFAULT expr`` is kept as the column's metadata too (``DEFAULT_EXPRESSION``)
and applied by the framework (:func:`with_defaults`) to every write whose query leaves the column out: a DataFrame
write with ``mergeSchema`` (every pipeline write) leaves a column NULL whatever Delta's own column default says
(seen with delta-spark 4.4.1). ``MASK`` is refused with an error naming the clause: masks are Unity Catalog's.

Pure text handling here (no Spark: ``validate --static`` checks it); :func:`declared_schema` needs a session.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from framework import internals

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

GENERATION_EXPRESSION = "delta.generationExpression"  # Delta's column metadata key of a generated column
IDENTITY_START, IDENTITY_STEP = "delta.identity.start", "delta.identity.step"
IDENTITY_EXPLICIT = "delta.identity.allowExplicitInsert"  # True for BY DEFAULT: a write may supply the value
DEFAULT_EXPRESSION = "medallion.default"  # a column's DEFAULT expr (not Delta's CURRENT_DEFAULT: see above)

_WHY = {  # why each refused clause cannot be honoured, with what to do instead
    "MASK": "column masks are a Unity Catalog feature; mask the column in the query",
}
_UNSUPPORTED = tuple(_WHY)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ColumnClauseError(ValueError):
    """A column definition this framework cannot honour (``clause`` names it) or cannot read."""

    def __init__(self, message: str, column: str, clause: str) -> None:
        super().__init__(message)
        self.column = column
        self.clause = clause


@dataclass(frozen=True)
class ColumnList:
    """A column list split for Spark: ``ddl`` (what Spark's schema parser reads) and the Delta metadata of
    each column that had a generation or identity clause, as (column, metadata) pairs."""

    ddl: str
    metadata: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()

    def metadata_of(self, column: str) -> dict[str, Any]:
        """The Delta metadata declared for ``column`` (case-insensitive), empty when none."""
        for name, pairs in self.metadata:
            if name.lower() == column.lower():
                return dict(pairs)
        return {}


def split_column_list(schema: str) -> ColumnList:
    """``schema`` (a DDL column list) without its generation and identity clauses, which become metadata.

    Raises:
        ColumnClauseError: for ``DEFAULT`` or ``MASK``, or a generation or identity clause that does not parse.
    """
    pieces, metadata = [], []
    for piece in _top_level(schema, ","):
        text, extras = _column(piece.strip())
        if text:
            pieces.append(text)
        if extras:
            metadata.append((_column_name(text), tuple(extras.items())))
    return ColumnList(", ".join(pieces), tuple(metadata))


def declared_schema(spark: SparkSession, schema: Any) -> StructType | None:
    """A declared schema (DDL string or ``StructType``) as a ``StructType`` whose generated and identity
    columns carry Delta's metadata; None when nothing is declared. Spark's parser errors pass through."""
    from pyspark.sql.types import StructField, StructType

    if schema is None or isinstance(schema, StructType):
        return schema
    columns = split_column_list(str(schema))
    parsed = internals.parse_datatype(columns.ddl)
    if not isinstance(parsed, StructType):  # a single type: createDataFrame names the column as it does
        return spark.createDataFrame([], columns.ddl).schema
    return StructType([StructField(f.name, f.dataType, f.nullable, {**f.metadata, **columns.metadata_of(f.name)})
                       for f in parsed.fields])


def computed_columns(schema: StructType | None) -> dict[str, str | None]:
    """The columns Delta computes on write when a write leaves them out: generated columns with their
    expression, identity columns with None (by lower-case name)."""
    if schema is None:
        return {}
    out: dict[str, str | None] = {}
    for f in schema.fields:
        if GENERATION_EXPRESSION in f.metadata:
            out[f.name.lower()] = str(f.metadata[GENERATION_EXPRESSION])
        elif IDENTITY_START in f.metadata:
            out[f.name.lower()] = None
    return out


def _column(text: str) -> tuple[str, dict[str, Any]]:
    """One column definition without its GENERATED clause, and that clause as Delta metadata."""
    name = _column_name(text)
    text = _without_key_constraint(text)
    words = [(m.start(), m.group(0).upper()) for m in _top_level_words(text)]
    for _, word in words[1:]:
        if word in _UNSUPPORTED:
            raise ColumnClauseError(f"column '{name}': the {word} clause is not supported locally ({_WHY[word]})",
                                    name, word)
    defaults = [start for (_, before), (start, word) in itertools.pairwise(words) if word == "DEFAULT"
                and before != "BY"]  # GENERATED BY DEFAULT AS IDENTITY is an identity clause
    if defaults:
        return _default(text, defaults[0], words)
    generated = [start for start, word in words[1:] if word == "GENERATED"]
    if not generated:
        return text, {}
    start = generated[0]
    end, extras = _generated(text[start:], name)
    return (text[:start].rstrip() + " " + text[start + end:].lstrip()).strip(), extras


def _default(text: str, start: int, words: list[tuple[int, str]]) -> tuple[str, dict[str, Any]]:
    """A column definition without its ``DEFAULT expr`` (up to a following COMMENT), and the expression."""
    end = next((offset for offset, word in words if offset > start and word == "COMMENT"), len(text))
    expression = text[start + len("DEFAULT"):end].strip()
    if not expression:
        raise ColumnClauseError(f"column '{_column_name(text)}': DEFAULT needs an expression", _column_name(text),
                                "DEFAULT")
    return (text[:start].rstrip() + " " + text[end:].lstrip()).strip(), {DEFAULT_EXPRESSION: expression}


_AFTER_KEY = {"COMMENT", "MASK", "GENERATED", "DEFAULT"}  # clauses that may follow a column's key constraint


def _without_key_constraint(text: str) -> str:
    """A column definition without its informational key constraint (``[CONSTRAINT name] PRIMARY KEY ...`` or
    ``[CONSTRAINT name] FOREIGN KEY REFERENCES parent [(col)] [options]``). Databricks records these in Unity
    Catalog and enforces none of them; Spark's schema parser does not read them, so they are left out here."""
    words = [(m.start(), m.group(0).upper()) for m in _top_level_words(text)][1:]  # after the column's name
    start = None
    for i, (offset, word) in enumerate(words):
        following = words[i + 1][1] if i + 1 < len(words) else ""
        if start is None and (word == "CONSTRAINT" or (word in ("PRIMARY", "FOREIGN") and following == "KEY")):
            start = offset
        elif start is not None and word in _AFTER_KEY:
            return (text[:start].rstrip() + " " + text[offset:]).strip()
    return text if start is None else text[:start].rstrip()


def _generated(text: str, name: str) -> tuple[int, dict[str, Any]]:
    """``GENERATED ...`` at the start of ``text``: how long the clause is, and its metadata."""
    head = re.match(r"GENERATED\s+(ALWAYS|BY\s+DEFAULT)\s+AS\s*", text, re.IGNORECASE)
    if head is None:
        raise ColumnClauseError(f"column '{name}': expected GENERATED ALWAYS AS (expr) or GENERATED "
                                "{ALWAYS | BY DEFAULT} AS IDENTITY", name, "GENERATED")
    rest = text[head.end():]
    always = head.group(1).upper() == "ALWAYS"
    identity = re.match(r"IDENTITY\b\s*", rest, re.IGNORECASE)
    if identity is None:
        if not always or not rest.startswith("("):
            raise ColumnClauseError(f"column '{name}': GENERATED ALWAYS AS takes a parenthesized expression",
                                    name, "GENERATED ALWAYS AS")
        inner = _parenthesized(rest, name)
        return head.end() + len(inner) + 2, {GENERATION_EXPRESSION: inner.strip()}
    end = head.end() + identity.end()
    start, step = 1, 1
    if rest[identity.end():].startswith("("):
        options = _parenthesized(rest[identity.end():], name)
        start, step = _identity_options(options, name)
        end += len(options) + 2
    return end, {IDENTITY_START: start, IDENTITY_STEP: step, IDENTITY_EXPLICIT: not always}


def _identity_options(text: str, name: str) -> tuple[int, int]:
    """``START WITH s INCREMENT BY i`` (either, in any order)."""
    found = dict.fromkeys(("START", "INCREMENT"), 1)
    rest = text.strip()
    while rest:
        match = re.match(r"(START\s+WITH|INCREMENT\s+BY)\s+(-?\d+)\s*", rest, re.IGNORECASE)
        if match is None:
            raise ColumnClauseError(f"column '{name}': IDENTITY takes (START WITH n INCREMENT BY n), got ({text})",
                                    name, "IDENTITY")
        found[match.group(1).split()[0].upper()] = int(match.group(2))
        rest = rest[match.end():]
    if found["INCREMENT"] == 0:
        raise ColumnClauseError(f"column '{name}': IDENTITY's INCREMENT BY must not be 0", name, "IDENTITY")
    return found["START"], found["INCREMENT"]


def _column_name(text: str) -> str:
    """The name a column definition starts with (unquoted)."""
    if text.startswith("`"):
        end = text.find("`", 1)
        while end > 0 and text[end + 1:end + 2] == "`":
            end = text.find("`", end + 2)
        return text[1:end].replace("``", "`") if end > 0 else text.strip("`")
    return text.split(None, 1)[0] if text.split() else text


def _parenthesized(text: str, name: str) -> str:
    """The text inside the parentheses ``text`` starts with."""
    depth = 0
    for i, char in _scan(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return text[1:i]
    raise ColumnClauseError(f"column '{name}': unbalanced parentheses in '{text}'", name, "GENERATED")


def _scan(text: str) -> list[tuple[int, str]]:
    """The characters of ``text`` outside quotes ('...', "...", `...`) and comments, with their offsets."""
    out: list[tuple[int, str]] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in "'\"`":
            close = i + 1
            while close < n and text[close] != char:
                close += 2 if text[close] == "\\" and char != "`" else 1
            i = close + 1
            continue
        if text.startswith("--", i):
            i = n if (newline := text.find("\n", i)) < 0 else newline + 1
            continue
        out.append((i, char))
        i += 1
    return out


def _levels(text: str) -> list[tuple[int, str, int]]:
    """The characters of ``text`` outside quotes with their nesting depth (parentheses, and the angle brackets
    of ``STRUCT<...>``, ``ARRAY<...>`` and ``MAP<...>``; a ``<`` or ``>`` elsewhere is a comparison)."""
    out: list[tuple[int, str, int]] = []
    parens = angles = 0
    for i, char in _scan(text):
        if char == "(":
            parens += 1
        elif char == ")":
            parens -= 1
        elif char == "<" and re.search(r"\b(STRUCT|ARRAY|MAP)\s*$", text[:i], re.IGNORECASE):
            angles += 1
        elif char == ">" and angles:
            angles -= 1
        out.append((i, char, parens + angles))  # brackets, commas and words only matter at depth 0
    return out


def _top_level(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside parentheses, type brackets (``STRUCT<a: INT, b: INT>``) and quotes."""
    pieces, start = [], 0
    for i, char, depth in _levels(text):
        if char == separator and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    return [p for p in pieces if p.strip()]


def _top_level_words(text: str) -> list[re.Match[str]]:
    """The words of ``text`` outside parentheses, type brackets and quotes."""
    allowed = {i for i, _char, depth in _levels(text) if depth == 0}
    return [m for m in _WORD.finditer(text) if m.start() in allowed and m.end() - 1 in allowed
            and (m.start() == 0 or not (text[m.start() - 1].isalnum() or text[m.start() - 1] == "_"))]


_KEPT = ("comment", GENERATION_EXPRESSION, IDENTITY_START, IDENTITY_STEP, IDENTITY_EXPLICIT)


def same_columns(stored: StructType, declared: StructType) -> bool:
    """Whether a table's stored schema has the declared columns: names, types, nullability, comments and
    generation and identity clauses (Delta's own bookkeeping, such as an identity's high water mark, aside)."""

    def key(schema: StructType) -> list[tuple[Any, ...]]:
        return [(f.name, f.dataType.simpleString(), f.nullable, *(f.metadata.get(k) for k in _KEPT))
                for f in schema.fields]

    return key(stored) == key(declared)


def stored_schema(spark: SparkSession, path: str) -> StructType | None:
    """The schema of the Delta table at ``path`` with its column metadata (a read's schema leaves out the
    generation expressions), from the log's newest ``metaData``; None when there is no table."""
    import json

    from pyspark.sql.types import StructType

    from framework.storage.log import has_commit, latest_metadata

    if not has_commit(path):
        return None
    metadata = latest_metadata(path)
    if metadata is not None:
        return StructType.fromJson(json.loads(metadata["schemaString"]))
    # the metadata is in a checkpoint: Delta's snapshot knows it
    return StructType.fromJson(json.loads(internals.delta_schema_json(spark, path)))


def with_defaults(df: DataFrame, declared: StructType | None) -> DataFrame:
    """``df`` with the declared columns it leaves out that have a ``DEFAULT expr``, computed from it (cast to
    the declared type). Other columns are left as they are."""
    from pyspark.sql import functions as F

    if declared is None:
        return df
    present = {name.lower() for name in df.columns}
    added = [F.expr(str(f.metadata[DEFAULT_EXPRESSION])).cast(f.dataType).alias(f.name) for f in declared.fields
             if DEFAULT_EXPRESSION in f.metadata and f.name.lower() not in present]
    return df.select("*", *added) if added else df


def with_computed_columns(df: DataFrame, declared: StructType | None) -> DataFrame:
    """``df`` (a query's output) as its table will read: with the declared generated columns the query leaves
    out computed from their expressions, and identity columns as typed NULLs (for analysis only: the
    resolution's stand-in of a dataset, which downstream queries are analysed against)."""
    from pyspark.sql import functions as F

    df = with_defaults(df, declared)
    computed = computed_columns(declared)
    present = {name.lower() for name in df.columns}
    missing = [f for f in (declared.fields if declared is not None else []) if f.name.lower() in computed
               and f.name.lower() not in present]
    if not missing:
        return df
    added = [(F.expr(expr) if (expr := computed[f.name.lower()]) is not None else F.lit(None))
             .cast(f.dataType).alias(f.name) for f in missing]
    return df.select("*", *added)


def without_column_clauses(df: DataFrame) -> DataFrame:
    """``df`` without the identity and generation metadata its columns bring from the tables they were read
    from. Delta's reads keep ``delta.identity.*`` in the schema, and a write creating a table from such a
    DataFrame makes the column an identity column of the new table, whose next write then fails
    (DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED): a dataset's columns are generated only where its
    own declaration says so."""
    from pyspark.sql import functions as F

    def plain(metadata: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in metadata.items() if k != GENERATION_EXPRESSION and not k.startswith("delta.identity.")}

    fields = df.schema.fields
    if not any(plain(f.metadata) != f.metadata for f in fields):
        return df
    return df.select(*[F.col(f"`{f.name}`").alias(f.name, metadata=plain(f.metadata))
                       if plain(f.metadata) != f.metadata else F.col(f"`{f.name}`") for f in fields])

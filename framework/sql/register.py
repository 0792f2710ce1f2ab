"""DLT SQL statements → the registry's declarations (the same frozen dataclasses Python pipelines declare).

Each dataset or flow with a query gets a query function that runs the query through ``query.py`` when the
runner resolves or executes it; nothing touches Spark while the library loads (``validate --static`` works).
"""

from __future__ import annotations

import builtins
import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from framework.api import declare_auto_cdc_flow, declare_auto_cdc_from_snapshot_flow
from framework.columns import ColumnClauseError, split_column_list
from framework.declarations import Dataset, DatasetKind, Expectation, Flow, FlowKind, SourceLocation
from framework.errors import PipelineError, SqlError
from framework.graph import relative_name, split_name
from framework.registry import active_registry
from framework.sql import envelope as env
from framework.sql.tokens import IDENT, PUNCT, WORD, TokenizeError, tokenize

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from framework.sql.split import Statement

_KINDS = {"streaming_table": DatasetKind.STREAMING_TABLE, "materialized_view": DatasetKind.MATERIALIZED_VIEW,
          "view": DatasetKind.VIEW}
_VARIABLE = re.compile(r"\$\{([^}]+)\}")


@dataclass
class _Library:
    """One SQL library being registered: its SET values apply to the statements that follow."""

    settings: dict[str, str] = field(default_factory=dict)
    scope: UseScope | None = None  # USE CATALOG / USE SCHEMA: where the statements after it name things


@dataclass(frozen=True)
class UseScope:
    """The current catalog and schema of a SQL file after ``USE``: unqualified and partly qualified names of
    the statements that follow resolve there, as on Databricks (``catalog`` None: the pipeline's)."""

    catalog: str | None
    schema: str

    def after(self, use: env.UseStatement) -> UseScope:
        """The scope after ``use``: ``USE CATALOG c`` resets the schema to ``default``; ``USE SCHEMA c.s`` sets
        both."""
        parts = split_name(use.name)
        catalog, schema = (parts[-1], "default") if use.kind == "catalog" else \
            (parts[0], parts[1]) if len(parts) == 2 else (self.catalog, parts[-1])
        return dataclasses.replace(self, catalog=catalog, schema=schema)

    default_catalog: str | None = None  # the pipeline's: names in it are written without it
    default_schema: str = "default"

    def qualify(self, name: str) -> str:
        """``name`` (as ``_bare`` gives it) qualified by the scope, then relative to the pipeline's catalog and
        schema (``main.sales.t`` in a pipeline publishing to ``main.sales`` is ``t``); three parts stay."""
        parts = split_name(name)
        if len(parts) == 1:
            parts = [self.schema, *parts]
        if len(parts) == 2 and self.catalog is not None:
            parts = [self.catalog, *parts]
        return ".".join(relative_name(parts, self.default_catalog, self.default_schema))


def register_statements(statements: Sequence[Statement]) -> None:
    """Register what every statement declares, in order (``SET`` applies to the statements after it)."""
    library = _Library()
    for statement in statements:
        _register(statement, library)


def _register(statement: Statement, library: _Library) -> None:
    text = _substitute(statement, library)
    try:
        parsed = env.parse_statement(text)
    except (env.EnvelopeError, TokenizeError) as exc:
        raise _error(statement, str(exc), exc.offset, getattr(exc, "code", "SQL_PARSE_ERROR")) from None
    if isinstance(parsed, env.SetStatement):
        if parsed.value is not None:
            library.settings[parsed.key] = parsed.value
        return
    if isinstance(parsed, env.FunctionStatement):
        _function(statement, text)
        return
    if isinstance(parsed, env.UseStatement):
        registry = active_registry()
        scope = library.scope or UseScope(None, registry.schema, registry.catalog, registry.schema)
        library.scope = scope.after(parsed)
        return
    try:
        if isinstance(parsed, env.CreateDataset):
            _dataset(statement, parsed, library)
        elif isinstance(parsed, env.CreateFlow):
            _flow(statement, parsed, library)
        else:
            _changes(statement, parsed.changes, flow_name=None, once=False, library=library)
    except PipelineError as exc:
        if exc.file is None:
            exc.file, exc.line = statement.file, statement.line
            exc.args = (exc.render(),)
        raise


def _function(statement: Statement, text: str) -> None:
    """Create the SQL function of a ``CREATE FUNCTION`` statement now, through the pipeline's ``spark`` (which
    keeps a Unity Catalog name's function where the framework's catalog finds it); loaded without Spark
    (``validate --static``) the statement is Spark's to check when the pipeline runs."""
    from pyspark.errors import PySparkException

    from framework.sql.functions import function_name

    spark = getattr(builtins, "spark", None)
    if spark is None or not callable(getattr(type(spark), "sql", None)):
        return
    try:
        spark.sql(text)
    except PySparkException as exc:  # Spark's parse or analysis error, reported with the statement's place
        line, column = statement.position(0)
        name = function_name(text)
        what = ".".join(name.parts) if name is not None else "?"
        raise SqlError(f"CREATE FUNCTION {what} failed (the schema of a Unity Catalog name must exist): {exc}",
                       code="SQL_FUNCTION_ERROR", file=statement.file,
                       line=line, column=column) from None


def _substitute(statement: Statement, library: _Library) -> str:
    """``${key}`` from the SET values before it, then the pipeline configuration (``spark.conf``)."""
    if "${" not in statement.text:
        return statement.text

    def value(match: re.Match[str]) -> str:
        key = match.group(1).strip()
        if key in library.settings:
            return library.settings[key]
        conf = getattr(getattr(builtins, "spark", None), "conf", None)
        try:
            found = conf.get(key, None) if conf is not None else None
        except PipelineError:
            found = None
        return str(found) if found is not None else match.group(0)

    return _VARIABLE.sub(value, statement.text)


def _error(statement: Statement, message: str, offset: int, code: str, dataset: str | None = None) -> SqlError:
    line, column = statement.position(min(offset, max(len(statement.text) - 1, 0)))
    return SqlError(message, code=code, file=statement.file, line=line, column=column, dataset=dataset)


def _location(statement: Statement, offset: int = 0) -> SourceLocation:
    return SourceLocation(statement.file, statement.position(offset)[0] if statement.text else statement.line)


def _scoped(name: str, library: _Library) -> str:
    """A dataset or table name of a statement after ``USE``, qualified by its scope."""
    return library.scope.qualify(name) if library.scope is not None else name


def _bare(name: str) -> str:
    """A dataset name as declared: without ``LIVE.`` and backticks."""
    parts = name.split(".")
    if len(parts) == 2 and parts[0].upper() == "LIVE":
        parts = parts[1:]
    return ".".join(p.strip("`").replace("``", "`") for p in parts)


def _dataset(statement: Statement, parsed: env.CreateDataset, library: _Library) -> None:
    name = _scoped(_bare(parsed.name), library) if not parsed.private else _bare(parsed.name)
    location = _location(statement)
    schema = ", ".join(parsed.columns) or None
    if schema is not None:
        try:  # GENERATED ... AS (expr) / AS IDENTITY / DEFAULT become column metadata; MASK is refused
            split_column_list(schema)
        except ColumnClauseError as exc:
            raise _error(statement, str(exc), parsed.offset, "SQL_UNSUPPORTED_CLAUSE", name) from None
    expectations = tuple(Expectation(c.name, c.expression.text, c.action,  # type: ignore[arg-type]
                                     _location(statement, c.expression.offset)) for c in parsed.constraints)
    dataset = Dataset(
        name=name, kind=_KINDS[parsed.kind], location=location, comment=parsed.comment,
        spark_conf=dict(library.settings), table_properties=dict(parsed.properties),
        partition_cols=parsed.partition_cols, cluster_by=parsed.cluster_by, cluster_by_auto=parsed.cluster_by_auto,
        path=parsed.location, schema=schema, private=parsed.private, refresh_policy=parsed.refresh_policy,
        expectations=expectations, declared_without_query=parsed.query is None)
    registry = active_registry()
    registry.add_dataset(dataset)
    if parsed.changes is not None:
        _changes(statement, parsed.changes, flow_name=name, once=False, target=name, library=library)
    elif parsed.query is not None:
        kind = FlowKind.APPEND if parsed.flow_once or (parsed.kind == "streaming_table" and _is_flow(parsed)) \
            else FlowKind.QUERY
        registry.add_flow(Flow(name=name, target=name, kind=kind, location=location,
                               query_function=query_function(statement, parsed.query, name, library.scope),
                               once=parsed.flow_once,
                               spark_conf=dict(library.settings), comment=parsed.comment,
                               replace_where=parsed.replace_where.text if parsed.replace_where else None))


def _is_flow(parsed: env.CreateDataset) -> bool:
    """``CREATE STREAMING TABLE t FLOW INSERT BY NAME query``: the query is an append flow."""
    return parsed.flow_once


def _flow(statement: Statement, parsed: env.CreateFlow, library: _Library) -> None:
    if parsed.changes is not None:
        _changes(statement, parsed.changes, flow_name=parsed.name, once=False, library=library)
        return
    assert parsed.query is not None
    target = _scoped(_bare(parsed.target), library)
    active_registry().add_flow(Flow(
        name=parsed.name, target=target, kind=FlowKind.APPEND, location=_location(statement),
        query_function=query_function(statement, parsed.query, target, library.scope), once=parsed.once,
        comment=parsed.comment, spark_conf=dict(library.settings),
        replace_where=parsed.replace_where.text if parsed.replace_where else None, replace_using=parsed.replace_using,
        sequence_by=_sequence(parsed.sequence_by.text) if parsed.sequence_by else None))


def _changes(statement: Statement, changes: env.ChangesClause, *, flow_name: str | None, once: bool,
             library: _Library, target: str | None = None) -> None:
    target = target or _scoped(_bare(changes.target), library)
    source = _scoped(_bare(changes.source), library)
    if changes.snapshot:
        declare_auto_cdc_from_snapshot_flow(
            _location(statement, changes.offset), target=target, source=source, keys=list(changes.keys),
            stored_as_scd_type=changes.scd_type, once=once or changes.once,
            flow_name=flow_name, track_history_column_list=changes.track_history,
            track_history_except_column_list=changes.track_history_except)
        return
    assert changes.sequence_by is not None
    arguments: dict[str, Any] = {
        "ignore_null_updates": changes.ignore_null_updates or None,
        "apply_as_deletes": changes.delete_when.text if changes.delete_when else None,
        "apply_as_truncates": changes.truncate_when.text if changes.truncate_when else None,
        "column_list": changes.column_list, "except_column_list": changes.except_column_list,
        "track_history_column_list": changes.track_history,
        "track_history_except_column_list": changes.track_history_except,
        "ignore_null_updates_column_list": changes.ignore_null_updates_column_list,
        "ignore_null_updates_except_column_list": changes.ignore_null_updates_except_column_list,
        "columns_to_update": changes.columns_to_update,
    }
    declare_auto_cdc_flow(_location(statement, changes.offset), target=target, source=source,
                          keys=list(changes.keys),
                          sequence_by=_sequence(changes.sequence_by.text), flow_name=flow_name,
                          once=once or changes.once,
                          stored_as_scd_type=changes.scd_type, **arguments)


def _sequence(text: str) -> Any:
    """``SEQUENCE BY``: a column name as a string, an expression as a Column (needs Spark)."""
    tokens = tokenize(text)
    if len(tokens) == 1 and tokens[0].kind in (WORD, IDENT):
        return tokens[0].value
    from pyspark.sql import functions as F

    return F.expr(text)


def query_function(statement: Statement, query: env.Fragment, dataset: str,
                   scope: UseScope | None = None) -> Callable[[], DataFrame]:
    """The query function of a SQL dataset or flow: runs the query (its table names in ``scope``, the ``USE``
    before it), errors placed in the SQL file."""

    def run() -> DataFrame:
        from framework.sql.query import query_dataframe

        try:
            return query_dataframe(query.text, qualify=scope.qualify if scope is not None else None)
        except SqlError as exc:
            if exc.file is None:
                raise _error(statement, exc.message, query.offset, exc.code, dataset) from None
            raise
        except Exception as exc:
            offset = _parse_error_offset(exc, query.text)
            if offset is None:
                raise
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise _error(statement, first, query.offset + offset, "SQL_PARSE_ERROR", dataset) from None

    run.__name__ = dataset
    run.__medallion_sql_reads__ = static_reads(query.text)  # type: ignore[attr-defined]
    run.__medallion_sql_streaming__ = _streams(query.text)  # type: ignore[attr-defined]
    run.__medallion_sql_query__ = (statement, query)  # type: ignore[attr-defined]  # validate --static's lint
    return run


def _parse_error_offset(exc: BaseException, text: str) -> int | None:
    """Where Spark's ParseException points in ``text`` (its line and position), or None for other errors."""
    java = getattr(exc, "_origin", None)
    if java is None or java.getClass().getSimpleName() != "ParseException":
        return None
    line, position = java.line(), java.startPosition()
    if not (line.isDefined() and position.isDefined()):
        return 0
    lines = text.split("\n")
    row = min(int(line.get()), len(lines)) - 1
    return sum(len(x) + 1 for x in lines[:row]) + int(position.get())


def _streams(text: str) -> bool:
    """Whether the query streams (``STREAM`` anywhere in its FROM clauses), found without Spark."""
    try:
        tokens = tokenize(text)
    except TokenizeError:
        return False
    return any(t.is_word("STREAM") for t in tokens) or any(t.is_word("CLOUD_FILES") for t in tokens)


def static_reads(text: str) -> list[tuple[str, bool]]:
    """The relations a query reads, found without Spark (``validate --static``): the names after FROM and
    JOIN, ``STREAM(name)`` and ``STREAM name`` streaming. Table-valued functions and CTE names are left out."""
    try:
        tokens = tokenize(text)
    except TokenizeError:
        return []
    ctes = {tokens[i - 1].value.lower() for i, t in enumerate(tokens)
            if t.is_word("AS") and i > 0 and i + 1 < len(tokens) and tokens[i + 1].value == "("
            and tokens[i - 1].kind in (WORD, IDENT)}
    reads: list[tuple[str, bool]] = []
    for i, token in enumerate(tokens[:-1]):
        if not token.is_word("FROM", "JOIN"):
            continue
        j, streaming = i + 1, False
        if tokens[j].is_word("STREAM"):
            streaming, j = True, j + 1
            if j < len(tokens) and tokens[j].kind == PUNCT and tokens[j].value == "(":
                j += 1
        name, j = _dotted(tokens, j)
        if name and (j >= len(tokens) or tokens[j].value != "(") and name.lower() not in ctes:
            reads.append((name, streaming))
    return reads


def _dotted(tokens: list[Any], j: int) -> tuple[str, int]:
    parts: list[str] = []
    while j < len(tokens) and tokens[j].kind in (WORD, IDENT):
        parts.append(tokens[j].value)
        j += 1
        if j < len(tokens) and tokens[j].kind == PUNCT and tokens[j].value == ".":
            j += 1
        else:
            break
    return ".".join(parts), j

"""A DLT SQL query as a DataFrame: Spark parses it, the framework swaps what it reads for the pipeline's reads.

The query text is parsed by Spark's own SQL parser (no regular expressions). Every relation the parsed plan
reads is found with its place in the text: ``STREAM(x)`` / ``STREAM x``, ``LIVE.x``, ``schema.x``,
``catalog.schema.x``, ``read_files(...)`` (batch, or Auto Loader under ``STREAM``), ``read_kafka(...)``
(framework/kafka/sql.py), legacy ``cloud_files(...)`` and direct file queries (``json.`/path```). Each is read
through ``spark`` as pipeline code would (``spark.read.table``, ``spark.readStream.table``,
``format("cloudFiles")``), so the runner's reads, Databricks path mapping and Auto Loader apply, registered as a
temporary view, and its text replaced by the view's name; Spark then analyses the rewritten query.
"""

from __future__ import annotations

import builtins
import dataclasses
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from framework import internals
from framework.errors import SqlError
from framework.sql.metadata_column import mentions_metadata, with_metadata, without_metadata
from framework.sql.parameters import bind_parameters
from framework.sqlcompat import translate_databricks_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

FILE_FORMATS = {"json", "csv", "parquet", "orc", "text", "binaryfile", "avro", "xml", "delta"}
_AUTOLOADER_OPTIONS = {  # read_files names Auto Loader's options without the cloudFiles. prefix
    "allowoverwrites", "includeexistingfiles", "inferschema", "infercolumntypes", "maxbytespertrigger",
    "maxfileage", "maxfilespertrigger", "partitioncolumns", "schemaevolutionmode", "schemahints",
    "schemalocation", "validateoptions", "cleansource", "usenotifications", "useincrementallisting",
    "backfillinterval", "rescueddatacolumn",
}
_COUNTER = itertools.count()
# plan nodes without children or subqueries to look into (saves JVM calls: validate walks every query)
_LEAVES = {"UnresolvedRelation", "UnresolvedTableValuedFunction", "OneRowRelation", "LocalRelation"}


@dataclass(frozen=True)
class Relation:
    """One thing a query reads, and where it stands in the query text (``stop`` inclusive)."""

    kind: str  # table | files | read_files | cloud_files | read_kafka
    start: int
    stop: int
    streaming: bool
    name: str = ""  # table name (dotted), or the file format for direct file queries
    path: str = ""
    options: tuple[tuple[str, str], ...] = ()
    alias: str | None = None  # a table the query gives no alias: its own name, which its columns are qualified by


def parse_relations(spark: Any, text: str) -> list[Relation]:
    """What ``text`` reads, from Spark's parsed (unresolved) plan. Raises Spark's ParseException."""
    plan = internals.parse_plan(spark, text)
    ctes: set[str] = set()
    found: list[Relation] = []
    for node, streaming, alias in _nodes(plan, False):
        name = node.nodeName()
        if name == "UnresolvedWith":
            relations = node.cteRelations()
            ctes.update(str(relations.apply(i)._1()).lower() for i in range(relations.size()))
        elif name == "UnresolvedRelation":
            parts = _strings(node.multipartIdentifier())
            relation = _table_or_files(node, parts, streaming or bool(node.isStreaming()))
            found.append(_aliased(relation, node, parts, alias))
        elif name == "UnresolvedTableValuedFunction":
            function = _function(node, streaming or bool(node.isStreaming()))
            if function is not None:  # other table-valued functions (range, explode, ...) are Spark's own
                found.append(_aliased(function, node, [], alias))
    return [r for r in found if not (r.kind == "table" and r.name.lower() in ctes)]


def _aliased(relation: Relation, node: Any, parts: list[str], alias: str | None) -> Relation:
    """The name the rewritten text gives the relation's view. A table without an alias: its own name, which its
    columns are qualified by. ``STREAM(t) f`` / ``STREAM t AS f``: the wrapper's place in the text covers the
    alias too (Spark's parser), so the alias is written again after the view's name."""
    if alias is not None and isinstance(node, _Spanned):
        return dataclasses.replace(relation, alias=alias)
    if relation.kind != "table" or alias is not None:
        return relation
    return dataclasses.replace(relation, alias=parts[-1])


def _nodes(node: Any, streaming: bool, alias: str | None = None) -> Iterator[tuple[Any, bool, str | None]]:
    """Every plan node with whether it sits under ``STREAM``, subqueries included, and the alias the query
    gives it (its parent is a ``SubqueryAlias``), if any. A ``STREAM(...)`` node stands for its child, which
    takes its place in the text."""
    kind = node.nodeName()
    if kind == "NamedStreamingRelation":
        child = node.child()
        yield _Spanned(child, node, child.nodeName()), True, alias  # in the text: STREAM(...) stands for x
        return
    yield node, streaming, alias
    if kind in _LEAVES:
        return
    named = str(node.alias()) if kind == "SubqueryAlias" else None
    for seq in (node.children(), node.subqueries()):
        for i in range(seq.size()):
            yield from _nodes(seq.apply(i), streaming, named)
    if kind == "UnresolvedWith":  # the CTEs' own queries are not children
        relations = node.cteRelations()
        for i in range(relations.size()):
            yield from _nodes(relations.apply(i)._2(), streaming)


class _Spanned:
    """A node whose place in the text is its ``STREAM(...)`` wrapper's."""

    def __init__(self, node: Any, wrapper: Any, name: str) -> None:
        self._node = node
        self._wrapper = wrapper
        self._name = name

    def origin(self) -> Any:
        return self._wrapper.origin()

    def nodeName(self) -> str:  # the JVM method's name
        return self._name

    def __getattr__(self, name: str) -> Any:
        return getattr(self._node, name)


def _span(node: Any) -> tuple[int, int]:
    origin = node.origin()
    return int(origin.startIndex().get()), int(origin.stopIndex().get())


def _strings(seq: Any) -> list[str]:
    return [str(seq.apply(i)) for i in range(seq.size())]


def _table_or_files(node: Any, parts: list[str], streaming: bool) -> Relation:
    start, stop = _span(node)
    if len(parts) == 2 and parts[0].lower() in FILE_FORMATS and ("/" in parts[1] or ":" in parts[1]):
        return Relation("files", start, stop, streaming, name=parts[0].lower(), path=parts[1])
    return Relation("table", start, stop, streaming, name=".".join(_quote(p) for p in parts))


def _quote(part: str) -> str:
    return part if part.replace("_", "").isalnum() else "`" + part.replace("`", "``") + "`"


def _function(node: Any, streaming: bool) -> Relation | None:
    start, stop = _span(node)
    function = ".".join(_strings(node.name())).lower()
    if function not in ("read_files", "cloud_files", "read_kafka"):
        return None
    positional: list[str] = []
    named: list[tuple[str, str]] = []
    args = node.functionArgs()
    for i in range(args.size()):
        arg = args.apply(i)
        kind = arg.getClass().getSimpleName()
        if kind == "NamedArgumentExpression":
            named.append((str(arg.key()), _literal(arg.value())))
        elif kind == "UnresolvedFunction" and str(arg.nameParts().apply(0)).lower() == "map":
            values = [_literal(c) for c in _children(arg)]
            named.extend(zip(values[0::2], values[1::2], strict=True))
        else:
            positional.append(_literal(arg))
    if function == "read_kafka":  # framework/kafka/sql.py: named arguments only, as on Databricks
        if positional:
            raise SqlError("read_kafka takes named arguments only: read_kafka(bootstrapServers => '...', "
                           "subscribe => '...')", code="SQL_PARSE_ERROR")
        return Relation("read_kafka", start, stop, streaming, options=tuple(named))
    if function == "read_files":
        if not positional:
            raise SqlError("read_files needs a path", code="SQL_PARSE_ERROR")
        return Relation("read_files", start, stop, streaming, path=positional[0], options=tuple(named))
    if len(positional) < 2:
        raise SqlError("cloud_files needs a path and a format: cloud_files(path, format[, map(...)])",
                       code="SQL_PARSE_ERROR")
    return Relation("cloud_files", start, stop, True, path=positional[0], options=(("format", positional[1]), *named))


def _children(expr: Any) -> list[Any]:
    seq = expr.children()
    return [seq.apply(i) for i in range(seq.size())]


def _literal(expr: Any) -> str:
    if expr.getClass().getSimpleName() != "Literal":
        raise SqlError(f"expected a literal value, found {expr.sql()}", code="SQL_PARSE_ERROR")
    value = expr.value()
    return "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def query_dataframe(text: str, spark: Any = None, qualify: Callable[[str], str] | None = None) -> DataFrame:
    """Run the SQL query ``text`` inside the active flow: its reads through the pipeline's ``spark`` (the
    runner's session proxy: given, or the pipeline code's global while a flow runs); ``qualify`` names its
    tables in the scope of a ``USE`` before the statement."""
    spark = spark if spark is not None else builtins.spark  # type: ignore[attr-defined]
    text = bind_parameters(text, getattr(spark, "pipeline_parameters", None) or {})  # the spec's `parameters`
    relations = sorted(parse_relations(spark, text), key=lambda r: r.start, reverse=True)
    rewritten = text
    session = spark
    metadata = mentions_metadata(text)
    for relation in relations:
        if qualify is not None and relation.kind == "table":
            relation = dataclasses.replace(relation, name=_in_scope(spark, relation.name, qualify))
        view = f"__live_sql_{next(_COUNTER)}"
        df = _read(spark, relation)
        if metadata and relation.kind in ("read_files", "cloud_files", "files"):
            df = with_metadata(df)
        df.createOrReplaceTempView(view)
        session = df.sparkSession  # the real session: the proxy's SQL bookkeeping is for user SQL
        # named as the query names the table (for `x.col`, and in Spark's messages), never `__live_sql_N`
        named = f"`{view}`" + (f" AS {_quote(relation.alias)}" if relation.alias else "")
        rewritten = rewritten[:relation.start] + named + rewritten[relation.stop + 1:]
    result = session.sql(translate_databricks_sql(rewritten))
    return without_metadata(spark, translate_databricks_sql(text), result) if metadata else result


def _in_scope(spark: Any, name: str, qualify: Callable[[str], str]) -> str:
    """``name`` in the ``USE`` scope, unless it is ``LIVE.x`` or the pipeline's private dataset or temporary
    view of that name (those belong to no schema)."""
    if name.upper().startswith("LIVE."):
        return name
    qualified = qualify(name)
    key = getattr(spark, "dataset_key", None)
    if key is not None and key(qualified) is None and key(name) is not None:
        return name
    return qualified


def _read(spark: Any, relation: Relation) -> DataFrame:
    if relation.kind == "table":
        reader = spark.readStream if relation.streaming else spark.read
        return reader.table(relation.name)
    if relation.kind == "files":
        return spark.read.format(relation.name).load(relation.path)
    if relation.kind == "read_kafka":
        from framework.kafka.sql import read_kafka

        return read_kafka(spark, relation.options, relation.streaming)
    options = {k: v for k, v in relation.options}
    fmt = options.pop("format", None)
    schema = options.pop("schema", None)  # a DDL string: the files' schema, as .schema(...) in Python
    if not fmt:
        raise SqlError(f"{relation.kind}('{relation.path}'): give the format (format => 'json')",
                       code="SQL_PARSE_ERROR")
    if relation.kind == "cloud_files" or relation.streaming:
        return _auto_loader(spark, relation, fmt, options, schema)
    reader = spark.read.format(fmt)
    reader = reader.schema(schema) if schema else reader.option("inferSchema", "true")
    if fmt.lower() == "csv":
        reader = reader.option("header", "true")  # read_files' default
    return reader.options(**options).load(relation.path)


def _auto_loader(spark: Any, relation: Relation, fmt: str, options: dict[str, str],
                 schema: str | None) -> DataFrame:
    """``STREAM read_files(...)`` and ``cloud_files(...)``: Auto Loader, with read_files' own defaults."""
    prefixed = {(f"cloudFiles.{k}" if k.lower() in _AUTOLOADER_OPTIONS else k): v for k, v in options.items()}
    reader = spark.readStream.format("cloudFiles").option("cloudFiles.format", fmt)
    if schema:
        reader = reader.schema(schema)
    if relation.kind == "read_files":
        reader = reader.option("cloudFiles.inferColumnTypes", "true")  # read_files infers types
    return reader.options(**prefixed).load(relation.path)

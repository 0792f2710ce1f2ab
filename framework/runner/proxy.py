"""The ``spark`` that pipeline code sees during an update: the real session, except that reads of pipeline
datasets resolve to the pipeline's tables, Databricks paths are mapped to local folders, the pipeline
configuration is served by ``spark.conf.get``, and ``format("cloudFiles")`` is Auto Loader."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from framework.internals import parse_plan
from framework.runner.catalogs import session_function_sql
from framework.sqlcompat import translate_databricks_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.runner.reads import ReadRouter

_PATH_OPTIONS = {"path", "cloudfiles.schemalocation", "cloudfiles.cleansource.movedestination", "badrecordspath",
                 "checkpointlocation", "sourcearchivedir"}
# Spark's error classes for a data source that is not on the class path: in general, and its own texts for
# Avro and Kafka (which ship as separate modules), error classes that Spark 4.2 still calls legacy
_CONNECTOR_MISSING = {"DATA_SOURCE_NOT_FOUND", "_LEGACY_ERROR_TEMP_1139", "_LEGACY_ERROR_TEMP_1140"}
_LIVE_REF = re.compile(r"\b(?:LIVE|live)\.`?(\w+)`?")


class ConfProxy:
    """``spark.conf``: the pipeline configuration first, then the real session conf."""

    def __init__(self, spark: SparkSession, configuration: dict[str, str]) -> None:
        self._spark = spark
        self._configuration = configuration

    def get(self, key: str, default: Any = None) -> Any:
        """The pipeline configuration's value of ``key``, else the session's (``default`` when neither has it)."""
        if key in self._configuration:
            return self._configuration[key]
        if default is None:
            return self._spark.conf.get(key)
        return self._spark.conf.get(key, default)

    def set(self, key: str, value: Any) -> None:
        """Set ``key`` in the pipeline configuration and on the session."""
        self._configuration[key] = str(value)
        self._spark.conf.set(key, value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spark.conf, name)


class ReaderProxy:
    """``spark.read`` / ``spark.readStream``: collects format, options and schema, then builds the real read."""

    def __init__(self, router: ReadRouter, streaming: bool) -> None:
        self._router = router
        self._streaming = streaming
        self._format: str | None = None
        self._options: dict[str, str] = {}
        self._schema: Any = None

    def format(self, source: str) -> ReaderProxy:
        """The source format (``json``, ``cloudFiles``, ``delta``, ...)."""
        self._format = source
        return self

    def option(self, key: str, value: Any) -> ReaderProxy:
        """One reader option (Databricks paths in path options are mapped when the read is built)."""
        self._options[key] = _opt(value)
        return self

    def options(self, **options: Any) -> ReaderProxy:
        """Several reader options."""
        for key, value in options.items():
            self.option(key, value)
        return self

    def schema(self, schema: Any) -> ReaderProxy:
        """The read's schema (a DDL string or a StructType)."""
        self._schema = schema
        return self

    def table(self, name: str) -> DataFrame:
        """A table by name: a pipeline dataset through the active flow's reader, else the catalog's."""
        return self._router.table(name, streaming=self._streaming, options=self._options)

    def load(self, path: str | list[str] | None = None, format: str | None = None, schema: Any = None,
             **options: Any) -> DataFrame:
        """The read itself: Databricks paths mapped, ``cloudFiles`` to Auto Loader, a missing connector said."""
        if format is not None:
            self.format(format)
        if schema is not None:
            self.schema(schema)
        self.options(**options)
        env = self._router.env
        mapped_options = {k: (env.map_path(v) if k.lower() in _PATH_OPTIONS else v)
                          for k, v in self._options.items()}
        if (self._format or "").lower() == "cloudfiles":
            return self._cloud_files(path, mapped_options)
        from framework.sources import check_read

        check_read(self._format, mapped_options)  # the framework's own sources: options checked on the driver
        from framework.kafka import check_kafka_read

        check_kafka_read(self._router.spark, self._format, mapped_options)  # brokers answer, topics exist
        reader: Any = self._router.spark.readStream if self._streaming else self._router.spark.read
        if self._format:
            reader = reader.format(self._format)
        if self._schema is not None:
            reader = reader.schema(self._schema)
        if mapped_options:
            reader = reader.options(**mapped_options)
        if path is None:
            if "path" in mapped_options:
                self._router.file_source(mapped_options["path"], streaming=self._streaming)
            else:
                self._router.inputs.unknown(f"{self._format or 'default'} source")
            return self._load(reader)
        if isinstance(path, (list, tuple)):
            paths = [env.map_path(p) for p in path]
            for local_path in paths:
                self._router.file_source(local_path, streaming=False)
            return self._load(reader, paths)
        local = env.map_path(path)
        self._router.file_source(local, streaming=self._streaming)
        return self._load(reader, local)

    def _cloud_files(self, path: Any, options: dict[str, str]) -> DataFrame:
        from framework.errors import AutoLoaderError

        if not self._streaming:
            raise AutoLoaderError("cloudFiles is a streaming source: use spark.readStream.format(\"cloudFiles\")")
        if not isinstance(path, str):
            raise AutoLoaderError("cloudFiles needs exactly one path: .load(\"/path/to/files\")")
        return self._router.cloud_files(self._router.env.map_path(path), options, self._schema)

    def _load(self, reader: Any, *args: Any) -> DataFrame:
        """``reader.load``; a connector missing from the class path (Kafka, Avro, ...) says how to add it."""
        try:
            return reader.load(*args)
        except Exception as exc:
            if not _connector_missing(exc):
                raise
            from framework.errors import ConnectorMissingError

            raise ConnectorMissingError(self._format or "default") from None

    def __getattr__(self, name: str) -> Any:
        """Every other reader method (``jdbc``, ``xml``, ...) is the real reader's, with the format, schema and
        options given so far."""
        if name.startswith("_"):
            raise AttributeError(name)
        reader: Any = self._router.spark.readStream if self._streaming else self._router.spark.read
        if self._format:
            reader = reader.format(self._format)
        if self._schema is not None:
            reader = reader.schema(self._schema)
        if self._options:
            reader = reader.options(**self._options)
        return getattr(reader, name)

    def _shortcut(self, fmt: str, path: Any, options: dict[str, Any]) -> DataFrame:
        self.format(fmt)
        schema = options.pop("schema", None)
        if schema is not None:
            self.schema(schema)
        return self.options(**{k: v for k, v in options.items() if v is not None}).load(path)

    def json(self, path: Any, **options: Any) -> DataFrame:
        """``spark.read.json``: a ``json`` format load."""
        return self._shortcut("json", path, options)

    def csv(self, path: Any, **options: Any) -> DataFrame:
        """``spark.read.csv``: a ``csv`` format load."""
        return self._shortcut("csv", path, options)

    def parquet(self, *paths: Any, **options: Any) -> DataFrame:
        """``spark.read.parquet``: a ``parquet`` format load."""
        return self._shortcut("parquet", list(paths) if len(paths) > 1 else paths[0], options)

    def text(self, path: Any, **options: Any) -> DataFrame:
        """``spark.read.text``: a ``text`` format load."""
        return self._shortcut("text", path, options)

    def orc(self, path: Any, **options: Any) -> DataFrame:
        """``spark.read.orc``: an ``orc`` format load."""
        return self._shortcut("orc", path, options)


def _connector_missing(exc: BaseException) -> bool:
    """Whether a reader's ``load`` failed because its data source is not on the class path: Spark's error class
    says so, or (a streaming source Spark looks up by class name, e.g. ``kinesis``) the JVM cause chain holds a
    ``ClassNotFoundException``."""
    if _condition(exc) in _CONNECTOR_MISSING:
        return True
    throwable = getattr(exc, "_origin", None) or getattr(exc, "java_exception", None)
    try:
        for _ in range(20):
            if throwable is None:
                return False
            if str(throwable.getClass().getName()) == "java.lang.ClassNotFoundException":
                return True
            cause = throwable.getCause()
            throwable = None if cause is None or cause.equals(throwable) else cause
    except Exception:  # not a JVM throwable after all
        return False
    return False


def _condition(exc: BaseException) -> str | None:
    """Spark's error class of a pyspark exception (its type's own accessor), or None."""
    get = getattr(exc, "getCondition", None)
    try:
        return str(get()) if callable(get) and get() else None
    except Exception:  # an exception without a JVM origin
        return None


def _opt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class SessionProxy:
    """Wraps the real SparkSession for pipeline code; everything not overridden is the real session's."""

    def __init__(self, router: ReadRouter) -> None:
        self._router = router
        self.conf = ConfProxy(router.spark, router.env.configuration)

    @property
    def pipeline_parameters(self) -> dict[str, str]:
        """The spec's pipeline ``parameters``, bound to ``:name`` markers in the pipeline's SQL queries."""
        return dict(self._router.env.spec.parameters)

    @property
    def read(self) -> ReaderProxy:
        """``spark.read``, routed through the pipeline's reads."""
        return ReaderProxy(self._router, streaming=False)

    @property
    def readStream(self) -> ReaderProxy:
        """``spark.readStream``, routed through the pipeline's reads."""
        return ReaderProxy(self._router, streaming=True)

    def table(self, name: str) -> DataFrame:
        """``spark.table``: a pipeline dataset through the active flow's reader, else the catalog's."""
        return self._router.table(name, streaming=False)

    def dataset_key(self, name: str) -> str | None:
        """The pipeline dataset ``name`` means for the flow being resolved or run (None: not one, or no flow)."""
        reader = self._router.current_or_none()
        return reader.names.internal(name) if reader is not None else None

    def sql(self, query: str, *args: Any, **kwargs: Any) -> DataFrame:
        """SQL with ``LIVE.name`` references resolved to the pipeline's datasets; a query inside a query function
        that names a pipeline dataset otherwise (``orders``, ``sales.orders``, ``main.sales.orders``) reads it as a
        SQL pipeline's query does, through the flow's reader (never the table an earlier update published). A
        function statement under a Unity Catalog name (``CREATE FUNCTION main.util.f ...``) creates the function
        where the framework's catalog keeps it (``catalogs.session_function_sql``)."""
        query = session_function_sql(self._router.spark, query, default=self._router.env.spec.catalog)
        reader = self._router.current_or_none()
        if reader is not None:
            def replace(match: re.Match[str]) -> str:
                return reader.sql_reference(match.group(1))

            query = _LIVE_REF.sub(replace, query)
            if not args and not kwargs and _reads_a_dataset(reader, self._router.spark, query):
                from framework.sql.query import query_dataframe

                return query_dataframe(query, spark=self)  # as a SQL pipeline's query: each read routed
        query = translate_databricks_sql(query)
        spark = self._router.spark
        for name in _relations(spark, query):
            if not name.startswith("__live_"):
                self._router.inputs.unknown(f"table {name} (SQL)")
        return spark.sql(query, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._router.spark, name)


def _reads_a_dataset(reader: Any, spark: SparkSession, query: str) -> bool:
    """Whether ``query`` names a dataset of the pipeline (False when it does not parse: Spark then says why)."""
    from framework.sql.query import parse_relations

    try:
        relations = parse_relations(spark, query)
    except Exception:  # Spark's ParseException, reported by Spark's own sql() next
        return False
    return any(r.kind == "table" and reader.names.internal(r.name) is not None for r in relations)


def _relations(spark: SparkSession, query: str) -> list[str]:
    """The tables and views a SQL text reads (parsed, not analysed); ``["?"]`` when it does not parse."""
    try:
        plan = parse_plan(spark, query)
        leaves = plan.collectLeaves()
        names = []
        for i in range(leaves.size()):
            leaf = leaves.apply(i)
            if leaf.getClass().getSimpleName() == "UnresolvedRelation":
                names.append(str(leaf.tableName()).lower())
        return names
    except Exception:
        return ["?"]

"""The ``spark`` that pipeline code sees during an update: the real session, except that reads of pipeline
datasets resolve to the pipeline's tables, Databricks paths are mapped to local folders, the pipeline
configuration is served by ``spark.conf.get``, and ``format("cloudFiles")`` is Auto Loader."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from framework.sqlcompat import translate_databricks_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.paths import PathMapper
    from framework.runner.resolve import UpdateContext

_PATH_OPTIONS = {"path", "cloudfiles.schemalocation", "cloudfiles.cleansource.movedestination", "badrecordspath",
                 "checkpointlocation", "sourcearchivedir"}
_LIVE_REF = re.compile(r"\b(?:LIVE|live)\.`?(\w+)`?")


class ConfProxy:
    """``spark.conf``: the pipeline configuration first, then the real session conf."""

    def __init__(self, spark: SparkSession, configuration: dict[str, str]) -> None:
        self._spark = spark
        self._configuration = configuration

    def get(self, key: str, default: Any = None) -> Any:
        if key in self._configuration:
            return self._configuration[key]
        if default is None:
            return self._spark.conf.get(key)
        return self._spark.conf.get(key, default)

    def set(self, key: str, value: Any) -> None:
        self._configuration[key] = str(value)
        self._spark.conf.set(key, value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spark.conf, name)


class ReaderProxy:
    """``spark.read`` / ``spark.readStream``: collects format, options and schema, then builds the real read."""

    def __init__(self, ctx: UpdateContext, streaming: bool) -> None:
        self._ctx = ctx
        self._streaming = streaming
        self._format: str | None = None
        self._options: dict[str, str] = {}
        self._schema: Any = None

    def format(self, source: str) -> ReaderProxy:
        self._format = source
        return self

    def option(self, key: str, value: Any) -> ReaderProxy:
        self._options[key] = _opt(value)
        return self

    def options(self, **options: Any) -> ReaderProxy:
        for key, value in options.items():
            self.option(key, value)
        return self

    def schema(self, schema: Any) -> ReaderProxy:
        self._schema = schema
        return self

    def table(self, name: str) -> DataFrame:
        return self._ctx.current_reader().table(name, streaming=self._streaming)

    def load(self, path: str | list[str] | None = None, format: str | None = None, schema: Any = None,
             **options: Any) -> DataFrame:
        if format is not None:
            self.format(format)
        if schema is not None:
            self.schema(schema)
        self.options(**options)
        mapped_options = {k: (self._ctx.map_path(v) if k.lower() in _PATH_OPTIONS else v)
                          for k, v in self._options.items()}
        if (self._format or "").lower() == "cloudfiles":
            if not self._streaming:
                from framework.errors import AutoLoaderError

                raise AutoLoaderError("cloudFiles is a streaming source: use spark.readStream.format(\"cloudFiles\")")
            if not isinstance(path, str):
                from framework.errors import AutoLoaderError

                raise AutoLoaderError("cloudFiles needs exactly one path: .load(\"/path/to/files\")")
            return self._ctx.cloud_files(self._ctx.map_path(path), mapped_options, self._schema)
        reader: Any = self._ctx.spark.readStream if self._streaming else self._ctx.spark.read
        if self._format:
            reader = reader.format(self._format)
        if self._schema is not None:
            reader = reader.schema(self._schema)
        if mapped_options:
            reader = reader.options(**mapped_options)
        if path is None:
            if "path" in mapped_options:
                self._ctx.inputs.path(mapped_options["path"])
            else:
                self._ctx.inputs.unknown(f"{self._format or 'default'} source")
            return reader.load()
        if isinstance(path, (list, tuple)):
            paths = [self._ctx.map_path(p) for p in path]
            for local_path in paths:
                self._ctx.inputs.path(local_path)
            return reader.load(paths)
        local = self._ctx.map_path(path)
        self._ctx.inputs.path(local)
        if self._streaming and local not in self._ctx.watched_paths:
            self._ctx.watched_paths.append(local)
        return reader.load(local)

    def _shortcut(self, fmt: str, path: Any, options: dict[str, Any]) -> DataFrame:
        self.format(fmt)
        schema = options.pop("schema", None)
        if schema is not None:
            self.schema(schema)
        return self.options(**{k: v for k, v in options.items() if v is not None}).load(path)

    def json(self, path: Any, **options: Any) -> DataFrame:
        return self._shortcut("json", path, options)

    def csv(self, path: Any, **options: Any) -> DataFrame:
        return self._shortcut("csv", path, options)

    def parquet(self, *paths: Any, **options: Any) -> DataFrame:
        return self._shortcut("parquet", list(paths) if len(paths) > 1 else paths[0], options)

    def text(self, path: Any, **options: Any) -> DataFrame:
        return self._shortcut("text", path, options)

    def orc(self, path: Any, **options: Any) -> DataFrame:
        return self._shortcut("orc", path, options)


def _opt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class SessionProxy:
    """Wraps the real SparkSession for pipeline code; everything not overridden is the real session's."""

    def __init__(self, ctx: UpdateContext) -> None:
        self._ctx = ctx
        self.conf = ConfProxy(ctx.spark, ctx.configuration)

    @property
    def read(self) -> ReaderProxy:
        return ReaderProxy(self._ctx, streaming=False)

    @property
    def readStream(self) -> ReaderProxy:
        return ReaderProxy(self._ctx, streaming=True)

    def table(self, name: str) -> DataFrame:
        return self._ctx.current_reader().table(name, streaming=False)

    def sql(self, query: str, *args: Any, **kwargs: Any) -> DataFrame:
        """SQL with ``LIVE.name`` references resolved to the pipeline's datasets."""
        reader = self._ctx.current_reader_or_none()
        if reader is not None:
            def replace(match: re.Match[str]) -> str:
                return reader.sql_reference(match.group(1))

            query = _LIVE_REF.sub(replace, query)
        query = translate_databricks_sql(query)
        for name in _relations(self._ctx.spark, query):
            if not name.startswith("__live_"):
                self._ctx.inputs.unknown(f"table {name} (SQL)")
        return self._ctx.spark.sql(query, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx.spark, name)


def _relations(spark: SparkSession, query: str) -> list[str]:
    """The tables and views a SQL text reads (parsed, not analysed); ``["?"]`` when it does not parse."""
    try:
        plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(query)
        leaves = plan.collectLeaves()
        names = []
        for i in range(leaves.size()):
            leaf = leaves.apply(i)
            if leaf.getClass().getSimpleName() == "UnresolvedRelation":
                names.append(str(leaf.tableName()).lower())
        return names
    except Exception:
        return ["?"]


@contextmanager
def mapped_writer_paths(mapper: PathMapper) -> Iterator[None]:
    """Map Databricks paths given to DataFrame writers (``df.write.save("dbfs:/...")``, ``.json/.csv/...``,
    ``writeStream.start(path)``) while pipeline code runs, as readers and ``dbutils.fs`` already do."""
    from pyspark.sql.readwriter import DataFrameWriter
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    patched: list[tuple[type, str, Any]] = []

    def wrap(cls: type, name: str) -> None:
        original = getattr(cls, name)

        def method(self: Any, path: Any = None, *args: Any, **kwargs: Any) -> Any:
            if isinstance(path, str):
                path = mapper.map(path)
            return original(self, path, *args, **kwargs)

        patched.append((cls, name, original))
        setattr(cls, name, method)

    for name in ("save", "json", "csv", "parquet", "text", "orc"):
        wrap(DataFrameWriter, name)
    wrap(DataStreamWriter, "start")
    try:
        yield
    finally:
        for cls, name, original in reversed(patched):
            setattr(cls, name, original)

"""Databricks paths mapped in every Spark and Delta API that takes a path, while an update runs.

Pipeline code's ``spark`` (``runner/proxy.py``) maps the paths it reads, but code also reaches the real session
and Delta's Python API directly: a ``foreachBatch`` handler gets ``batch_df.sparkSession`` (the real session, not
the proxy), and the usual upsert handler checks ``DeltaTable.isDeltaTable(spark, "dbfs:/...")`` before
``DeltaTable.forPath(...).merge(...)``. Unmapped, the check looks at a path that does not exist locally, so the
handler's second batch takes the first-write branch again and fails with DELTA_PATH_EXISTS. So for the update's
duration the path-taking methods of Spark's readers and writers (batch and streaming: ``load``, ``save``,
``start``, the format shortcuts, and the ``path`` / ``checkpointLocation`` / ... options) and of Delta's
``DeltaTable`` (``forPath``, ``isDeltaTable``, ``forName``/``convertToDelta`` of ``delta.`path```, the builders'
``location``) map their paths through the spec's ``paths``. Local paths pass unchanged, so the framework's own
reads and writes are unaffected (one prefix check each).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from framework.paths import PathMapper

PATH_OPTIONS = {"path", "cloudfiles.schemalocation", "cloudfiles.cleansource.movedestination", "badrecordspath",
                "checkpointlocation", "sourcearchivedir"}  # options whose values are paths (lower case)
_FORMAT_SHORTCUTS = ("json", "csv", "parquet", "text", "orc", "xml")
_PATH_IDENTIFIER = re.compile(r"^(\w+)\.`(.+)`$", re.DOTALL)  # delta.`/path`, parquet.`/path`


@contextmanager
def mapped_paths(mapper: PathMapper) -> Iterator[None]:
    """Map Databricks paths given to Spark's readers and writers and to Delta's ``DeltaTable`` API (see the
    module) until the block ends; the original methods are put back afterwards."""
    from delta.tables import DeltaTable, DeltaTableBuilder
    from pyspark.sql.readwriter import DataFrameReader, DataFrameWriter
    from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter

    patched: list[tuple[type, str, Any]] = []

    def patch(cls: type, name: str, wrap: Callable[[Any], Any]) -> None:
        raw = cls.__dict__.get(name)
        if raw is None:
            return  # a method this Spark or Delta version does not have
        patched.append((cls, name, raw))
        if isinstance(raw, classmethod):
            setattr(cls, name, classmethod(wrap(raw.__func__)))
        else:
            setattr(cls, name, wrap(raw))

    one, every, option, options = _wrappers(mapper)
    for cls in (DataFrameReader, DataStreamReader, DataFrameWriter, DataStreamWriter):
        for name in ("load", "save", "start", *_FORMAT_SHORTCUTS):
            patch(cls, name, every if (cls, name) == (DataFrameReader, "parquet") else one)
        patch(cls, "option", option)
        patch(cls, "options", options)
    patch(DeltaTableBuilder, "location", one)
    for name in ("forPath", "isDeltaTable", "forName", "convertToDelta"):
        patch(DeltaTable, name, _after_session(mapper))
    try:
        yield
    finally:
        for cls, name, raw in reversed(patched):
            setattr(cls, name, raw)


def _wrappers(mapper: PathMapper) -> tuple[Callable[[Any], Any], ...]:
    """Wrappers of methods whose first argument (or ``path=``) is a path or a list of paths; of
    ``parquet(*paths)``; of ``option(key, value)``; of ``options(**values)``."""

    def mapped(value: Any) -> Any:
        if isinstance(value, str):
            return mapper.map(value)
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return type(value)(mapper.map(v) for v in value)
        return value

    def one(original: Any) -> Any:
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            if args:
                args = (mapped(args[0]), *args[1:])
            for key in ("path", "paths", "location"):
                if key in kwargs:
                    kwargs[key] = mapped(kwargs[key])
            return original(self, *args, **kwargs)
        return method

    def every(original: Any) -> Any:
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return original(self, *(mapped(a) for a in args), **kwargs)
        return method

    def option(original: Any) -> Any:
        def method(self: Any, key: str, value: Any) -> Any:
            return original(self, key, mapped(value) if str(key).lower() in PATH_OPTIONS else value)
        return method

    def options(original: Any) -> Any:
        def method(self: Any, **values: Any) -> Any:
            return original(self, **{k: (mapped(v) if k.lower() in PATH_OPTIONS else v) for k, v in values.items()})
        return method

    return one, every, option, options


def _after_session(mapper: PathMapper) -> Callable[[Any], Any]:
    """A wrapper of a ``DeltaTable`` classmethod ``(cls, session, path_or_identifier, ...)``: a path is mapped,
    and so is the path inside a ``delta.`path``` identifier (a table name is left alone)."""

    def identifier(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        found = _PATH_IDENTIFIER.match(value)
        if found is not None:
            return f"{found.group(1)}.`{mapper.map(found.group(2))}`"
        return mapper.map(value) if mapper.is_databricks_path(value) or value.startswith("dbfs:") else value

    def wrap(original: Any) -> Any:
        def method(cls: Any, *args: Any, **kwargs: Any) -> Any:
            if len(args) > 1:
                args = (args[0], identifier(args[1]), *args[2:])
            for key in ("path", "identifier", "tableOrViewName"):
                if key in kwargs:
                    kwargs[key] = identifier(kwargs[key])
            return original(cls, *args, **kwargs)
        return method

    return wrap

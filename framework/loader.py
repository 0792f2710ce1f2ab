"""Load pipeline libraries (Python and SQL files, Databricks notebook sources, globs) into a registry.

Pipeline code runs top to bottom to *register* datasets and flows; query functions are not called here.
While it runs, ``import dlt`` and ``from pyspark import pipelines as dp`` resolve to the framework's shim,
and ``spark``, ``dbutils`` and ``display`` are available as in a Databricks notebook. ``.sql`` files and SQL
notebook sources are handed to :func:`framework.sql.register_sql_library` in the same registration context, so
a pipeline may mix Python and SQL libraries.
"""

from __future__ import annotations

import builtins
import glob as globlib
import re
import sys
import traceback
import types
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import framework.sql as sql_libraries
from framework.dbutils import LocalDbutils
from framework.errors import LoadError, PathMappingError, PipelineError, Problem, SpecError
from framework.notebook import is_notebook_source, notebook_to_python
from framework.paths import PathMapper
from framework.registry import Registry, registration_context
from framework.spec import Library, PipelineSpec, short_repr
from framework.sql.split import is_sql_notebook

_MODULE_PREFIX = "medallion_pipeline_"
_UNSET: Any = object()
# What a glob picks up besides notebook sources without an extension, and what a file or notebook library path
# without an extension may stand for (as in a workspace, where notebooks have no extension).
_LIBRARY_SUFFIXES = (".py", ".sql")


@dataclass
class LoadedPipeline:
    """A spec and everything its libraries declared."""

    spec: PipelineSpec
    registry: Registry
    files: tuple[Path, ...]
    mapper: PathMapper


class ConfOnlySpark:
    """Stands in for ``spark`` when a pipeline is loaded without Spark (unit tests, ``validate --no-spark``):
    ``spark.conf.get`` serves the pipeline configuration; anything else says Spark is not started."""

    class _Conf:
        def __init__(self, values: Mapping[str, str]) -> None:
            self._values = dict(values)

        def get(self, key: str, default: Any = _UNSET) -> Any:
            if key in self._values:
                return self._values[key]
            if default is not _UNSET:
                return default
            raise LoadError(f"spark.conf.get('{key}'): not set; add it to the spec's `configuration`",
                            code="CONF_NOT_SET")

        def set(self, key: str, value: Any) -> None:
            self._values[key] = str(value)

    def __init__(self, configuration: Mapping[str, str]) -> None:
        self.conf = self._Conf(configuration)

    def __getattr__(self, name: str) -> Any:
        raise LoadError(f"spark.{name} is not available while the pipeline is loaded without Spark; move Spark "
                        "work into query functions (they run during the update)", code="SPARK_NOT_STARTED")


def resolve_libraries(spec: PipelineSpec, mapper: PathMapper) -> list[Path]:
    """Expand the spec's libraries to files, reporting every missing one at once."""
    problems: list[Problem] = []
    files: list[Path] = []
    for library in spec.libraries:
        try:
            found = _resolve_library(library, spec.root, mapper)
        except PathMappingError as exc:
            problems.append(Problem(exc.code, exc.message, spec.source))
            continue
        if not found:
            problems.append(Problem("LIBRARY_NOT_FOUND",
                                    f"{library.kind} library {short_repr(library.path)} matches no file (looked "
                                    f"under {spec.root})", spec.source))
        for path in found:
            if path not in files:
                files.append(path)
    if problems:
        raise SpecError(spec.source, problems)
    return files


def _resolve_library(library: Library, root: Path, mapper: PathMapper) -> list[Path]:
    raw = mapper.map(library.path) if mapper.is_databricks_path(library.path) else library.path
    base = Path(raw) if Path(raw).is_absolute() else root / raw
    if library.kind == "glob":
        pattern = str(base)
        if pattern.endswith("/**"):
            pattern += "/*"
        matches = sorted(Path(p) for p in globlib.glob(pattern, recursive=True))
        return [p for p in matches if p.is_file() and p.name != "__init__.py" and "__pycache__" not in p.parts
                and (p.suffix in _LIBRARY_SUFFIXES or (p.suffix == "" and _is_notebook_file(p)))]
    for candidate in (base, *(base.with_name(base.name + suffix) for suffix in _LIBRARY_SUFFIXES)):
        if candidate.is_file():
            return [candidate.resolve()]
    return []


def _is_notebook_file(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            head = handle.read(64)
    except OSError:
        return False
    return is_notebook_source(head) or is_sql_notebook(head)


@contextmanager
def pipeline_environment(spark: Any, dbutils: Any, display: Any = None) -> Iterator[None]:
    """Install the shim modules and the notebook globals for the duration of the block."""
    import pyspark

    from framework.shim import dlt as shim_dlt
    from framework.shim import dp as shim_dp

    saved_modules = {name: sys.modules.get(name) for name in ("dlt", "pyspark.pipelines")}
    had_attr = hasattr(pyspark, "pipelines")
    saved_attr = getattr(pyspark, "pipelines", None)
    saved_builtins = {name: getattr(builtins, name, _MISSING) for name in ("spark", "dbutils", "display")}
    sys.modules["dlt"] = shim_dlt
    sys.modules["pyspark.pipelines"] = shim_dp
    pyspark.pipelines = shim_dp  # type: ignore[attr-defined]
    builtins.spark = spark  # type: ignore[attr-defined]
    builtins.dbutils = dbutils  # type: ignore[attr-defined]
    builtins.display = display or _display  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for name, module in saved_modules.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
        if had_attr:
            pyspark.pipelines = saved_attr  # type: ignore[attr-defined]
        elif hasattr(pyspark, "pipelines"):
            delattr(pyspark, "pipelines")
        for name, value in saved_builtins.items():
            if value is _MISSING:
                if hasattr(builtins, name):
                    delattr(builtins, name)
            else:
                setattr(builtins, name, value)


_MISSING = object()


def _display(obj: Any, *args: Any, **kwargs: Any) -> None:
    show = getattr(obj, "show", None)
    if callable(show):
        show(truncate=False)
    else:
        print(obj)


def load_pipeline(spec: PipelineSpec, *, spark: Any = None, dbutils: Any = None) -> LoadedPipeline:
    """Run every library of ``spec`` inside a fresh registry and return what they declared."""
    mapper = PathMapper.from_spec(spec.paths, spec.root)
    files = resolve_libraries(spec, mapper)
    spark = spark if spark is not None else ConfOnlySpark(spec.configuration)
    dbutils = dbutils if dbutils is not None else LocalDbutils(mapper, spec.configuration,
                                                               spec.root / ".secrets.env")
    registry = Registry(catalog=spec.catalog, schema=spec.schema)
    extra_paths = [str(spec.root), *sorted({str(f.parent) for f in files})]
    added = [p for p in extra_paths if p not in sys.path]
    sys.path[:0] = added
    modules_before = set(sys.modules)
    try:
        with pipeline_environment(spark, dbutils), registration_context(registry), _columns_for(spark):
            for path in files:
                _exec_library(path, spark, dbutils)
    finally:
        for p in added:
            if p in sys.path:
                sys.path.remove(p)
        # helper modules imported by this pipeline must not shadow a same-named helper of the next one; installed
        # packages stay, even in a virtualenv inside the pipeline's root (a second copy of pyspark's modules would
        # make its own Column objects foreign to it)
        installed = (sys.prefix.rstrip("/") + "/", sys.base_prefix.rstrip("/") + "/")
        for name in set(sys.modules) - modules_before:
            module_file = getattr(sys.modules[name], "__file__", None) or ""
            if (any(module_file.startswith(p.rstrip("/") + "/") for p in added)
                    and not module_file.startswith(installed)) or name.startswith(_MODULE_PREFIX):
                sys.modules.pop(name, None)
    return LoadedPipeline(spec=spec, registry=registry, files=tuple(files), mapper=mapper)


def _columns_for(spark: Any) -> Any:
    """Without Spark, top-level ``col(...)``/``expr(...)`` build text-only Columns (``framework/static_columns.py``),
    as they work on Databricks."""
    if not isinstance(spark, ConfOnlySpark):
        return nullcontext()
    from framework.static_columns import static_columns

    return static_columns()


def _exec_library(path: Path, spark: Any, dbutils: Any) -> None:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".sql" or is_sql_notebook(text):
        _load_sql_library(path, text)
        return
    source = notebook_to_python(text, str(path)) if is_notebook_source(text) else text
    module_name = _MODULE_PREFIX + re.sub(r"\W", "_", str(path.with_suffix("")).strip("/"))
    module = types.ModuleType(module_name)
    module.__file__ = str(path)
    module.__dict__.update({"spark": spark, "dbutils": dbutils, "display": _display})
    sys.modules[module_name] = module
    try:
        code = compile(source, str(path), "exec")
        exec(code, module.__dict__)
    except PipelineError as exc:
        if exc.file is None:
            exc.file = str(path)
            exc.line = _line_in(exc, str(path))
            exc.args = (exc.render(),)
        raise
    except SyntaxError as exc:
        raise LoadError(f"syntax error: {exc.msg}", file=str(path), line=exc.lineno) from exc
    except Exception as exc:
        line = _line_in(exc, str(path))
        if _needs_running_spark(exc):
            raise LoadError(_NEEDS_SPARK, code="SPARK_NOT_STARTED", file=str(path), line=line) from exc
        raise LoadError(f"loading failed: {type(exc).__name__}: {exc}", file=str(path), line=line) from exc


def _load_sql_library(path: Path, text: str) -> None:
    """Register what a ``.sql`` file or SQL notebook source declares. Framework errors keep their own file, line
    (and column); anything else becomes a :class:`LoadError` naming the file."""
    try:
        sql_libraries.register_sql_library(text, str(path))
    except PipelineError as exc:
        if exc.file is None:
            exc.file = str(path)
            exc.args = (exc.render(),)
        raise
    except Exception as exc:
        raise LoadError(f"loading failed: {type(exc).__name__}: {exc}", file=str(path)) from exc


_NEEDS_SPARK = ("this line builds a Spark Column (e.g. `F.col(...)`, `F.expr(...)`) at module level, which needs a "
                "running Spark session, and the pipeline was loaded without Spark (`validate --static`, "
                "`graph --static`, unit tests). Build it inside the query function (or a function it calls), or "
                "validate without --static")


def _needs_running_spark(exc: BaseException) -> bool:
    """Whether ``exc`` is PySpark's ``assert SparkContext._active_spark_context is not None`` (a bare
    AssertionError raised inside pyspark while no SparkContext exists)."""
    if not isinstance(exc, AssertionError):
        return False
    import pyspark
    from pyspark import SparkContext

    frames = traceback.extract_tb(exc.__traceback__)
    pyspark_dir = str(Path(str(pyspark.__file__)).parent)
    return bool(frames) and frames[-1].filename.startswith(pyspark_dir) and \
        SparkContext._active_spark_context is None


def _line_in(exc: BaseException, filename: str) -> int | None:
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == filename:
            line = frame.lineno
    return line

"""Spark Columns built at a pipeline file's top level while it is loaded without Spark (``validate --static``).

On Databricks a pipeline file runs with a session, so ``sequence_by=col("updated_at")`` or
``apply_as_deletes=expr("op = 'DELETE'")`` at module level is ordinary. Loaded without Spark, PySpark's column
functions fail (they call into the JVM). While such a load runs, :func:`static_columns` makes every function of
``pyspark.sql.functions`` return a :class:`StaticColumn` when no SparkContext is active: a ``Column`` that only
knows its expression text, enough for the declarations and the graph (``column_text``/``simple_name`` read the
text). With a SparkContext the real functions run, so a reference kept past the load is harmless.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.sql import Column

_BINARY = {"__eq__": "=", "__ne__": "!=", "__lt__": "<", "__le__": "<=", "__gt__": ">", "__ge__": ">=",
           "__and__": "AND", "__or__": "OR", "__add__": "+", "__sub__": "-", "__mul__": "*", "__truediv__": "/",
           "__mod__": "%"}
_KEEP = {"__new__", "__init__", "__repr__", "__str__", "__class__", "__getattribute__", "__getattr__",
         "__setattr__", "__delattr__", "__dict__", "__doc__", "__module__", "__weakref__", "__init_subclass__",
         "__subclasshook__", "__reduce__", "__reduce_ex__", "__sizeof__", "__dir__", "__format__", "__hash__",
         "__bool__", "__nonzero__", "__iter__", "__contains__"}


def _text(value: Any, *, name: bool = False) -> str:
    """A column's text, a column name as itself (``name``), any other value as a SQL literal."""
    if isinstance(value, StaticColumn):
        return value.text
    return repr(value) if isinstance(value, str) and not name else str(value)


class StaticColumn(Column):
    """A Column known by its expression text only (see the module's docstring)."""

    text: str

    def __new__(cls, text: str) -> StaticColumn:
        """A Column of ``text`` (``Column.__new__`` would build a JVM-backed one)."""
        column = object.__new__(cls)
        object.__setattr__(column, "text", text)
        return column

    def __init__(self, text: str) -> None:
        pass

    def __repr__(self) -> str:
        return f"Column<'{self.text}'>"

    __str__ = __repr__
    __hash__ = object.__hash__

    def __invert__(self) -> StaticColumn:
        return StaticColumn(f"(NOT {self.text})")


def _binary(op: str) -> Callable[..., StaticColumn]:
    def method(self: StaticColumn, other: Any) -> StaticColumn:
        return StaticColumn(f"({self.text} {op} {_text(other)})")
    return method


def _method(name: str) -> Callable[..., StaticColumn]:
    def method(self: StaticColumn, *args: Any, **kwargs: Any) -> StaticColumn:
        return StaticColumn(f"{name}({', '.join([self.text, *map(_text, args)])})")
    return method


for _name, _op in _BINARY.items():
    setattr(StaticColumn, _name, _binary(_op))
for _name in dir(Column):
    if _name not in _KEEP and _name not in _BINARY and _name != "__invert__" and callable(getattr(Column, _name)):
        setattr(StaticColumn, _name, _method(_name.strip("_")))


def _static_call(name: str, args: tuple[Any, ...]) -> StaticColumn:
    if name in ("col", "column") and len(args) == 1:
        return StaticColumn(str(args[0]))
    if name == "expr" and len(args) == 1:
        return StaticColumn(str(args[0]))
    if name == "lit" and len(args) == 1:
        return StaticColumn(_text(args[0]))
    return StaticColumn(f"{name}({', '.join(_text(a, name=True) for a in args)})")


def _wrapped(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(real)
    def function(*args: Any, **kwargs: Any) -> Any:
        from pyspark import SparkContext

        if SparkContext._active_spark_context is not None:
            return real(*args, **kwargs)
        return _static_call(name, args)
    return function


@contextmanager
def static_columns() -> Iterator[None]:
    """Make ``pyspark.sql.functions`` build :class:`StaticColumn` objects while no SparkContext is active."""
    import pyspark.sql.functions as functions

    names = [n for n in getattr(functions, "__all__", dir(functions))
             if not n.startswith("_") and callable(getattr(functions, n, None))
             and not isinstance(getattr(functions, n), type)]
    saved = {n: getattr(functions, n) for n in names}
    for name, real in saved.items():
        setattr(functions, name, _wrapped(name, real))
    try:
        yield
    finally:
        for name, real in saved.items():
            setattr(functions, name, real)

"""Which rescued data columns a flow's query produces, so that its rows with rescued data are counted under the
column's own name (Auto Loader's ``rescuedDataColumn`` option renames ``_rescued_data``).

The Auto Loader source notes its rescued column while the query function builds the DataFrame (the source is
planned eagerly, in the caller's context); the flow executor collects the names around that call. A context
variable, so that flows running in other threads never see each other's names.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_collecting: ContextVar[set[str] | None] = ContextVar("medallion_rescued_columns", default=None)


_ATTRIBUTE = "_medallion_rescued_columns"


@contextmanager
def collect_rescued_columns() -> Iterator[set[str]]:
    """The names of the rescued data columns noted while the ``with`` block runs (an enclosing collection sees
    them too)."""
    names: set[str] = set()
    token = _collecting.set(names)
    try:
        yield names
    finally:
        _collecting.reset(token)
        for name in names:
            note_rescued_column(name)


def remember_rescued_columns(df: DataFrame, names: set[str]) -> None:
    """Keep on ``df`` (a source built ahead, during the resolution) the rescued columns noted while building it."""
    setattr(df, _ATTRIBUTE, frozenset(names))


def note_rescued_columns_of(df: DataFrame) -> None:
    """Note again the rescued columns of a source built ahead (``remember_rescued_columns``) when it is used."""
    for name in getattr(df, _ATTRIBUTE, ()):
        note_rescued_column(name)


def note_rescued_column(name: str | None) -> None:
    """Record that the DataFrame being built carries rescued data in column ``name`` (None: no rescued column)."""
    names = _collecting.get()
    if names is not None and name:
        names.add(name)

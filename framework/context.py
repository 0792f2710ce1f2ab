"""The execution context that query functions run in: how ``dlt.read``/``read_stream`` find datasets.

The declaration side only knows the :class:`DatasetReader` protocol; the runner provides the implementation
while it resolves and executes flows. Outside one, reads fail with a clear error.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from framework.errors import RegistrationContextError


class DatasetReader(Protocol):
    """What ``dlt.read`` / ``dlt.read_stream`` delegate to while the runner runs query functions."""

    def read(self, name: str) -> Any:
        """A batch read of ``name`` (a pipeline dataset or an external table)."""
        ...

    def read_stream(self, name: str) -> Any:
        """A streaming read of ``name`` (a pipeline dataset or an external table)."""
        ...


_READER: contextvars.ContextVar[DatasetReader | None] = contextvars.ContextVar("medallion_reader", default=None)


def current_reader() -> DatasetReader:
    """The reader of the query function being run; fails outside one (e.g. at a pipeline file's top level)."""
    reader = _READER.get()
    if reader is None:
        raise RegistrationContextError(
            "dlt.read / dlt.read_stream can only be called inside a query function that the pipeline runs "
            "(the body of an @dlt.table / @dlt.view / @dlt.append_flow function), not at module level.")
    return reader


@contextmanager
def reader_context(reader: DatasetReader) -> Iterator[None]:
    """Make ``reader`` serve ``dlt.read`` / ``dlt.read_stream`` within the block (this context only)."""
    token = _READER.set(reader)
    try:
        yield
    finally:
        _READER.reset(token)

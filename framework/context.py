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
    def read(self, name: str) -> Any: ...

    def read_stream(self, name: str) -> Any: ...


_READER: contextvars.ContextVar[DatasetReader | None] = contextvars.ContextVar("medallion_reader", default=None)


def current_reader() -> DatasetReader:
    reader = _READER.get()
    if reader is None:
        raise RegistrationContextError(
            "dlt.read / dlt.read_stream can only be called inside a query function that the pipeline runs "
            "(the body of an @dlt.table / @dlt.view / @dlt.append_flow function), not at module level.")
    return reader


@contextmanager
def reader_context(reader: DatasetReader) -> Iterator[None]:
    token = _READER.set(reader)
    try:
        yield
    finally:
        _READER.reset(token)

"""Errors of the database sources, in the framework's hierarchy (:class:`~framework.errors.PipelineError`).

They are raised in the driver (option checks, the catalog lookup) and in Spark's Python workers (reads); a
worker's error reaches the driver as Spark's ``PythonException`` holding this error's rendered text, so every
message here is whole on its own and never holds a password (:func:`scrub`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from framework.errors import PipelineError, Problem, ProblemsError


class DatabaseSourceError(PipelineError):
    """A database source could not be read (root of this module's errors)."""

    code = "DATABASE_SOURCE_ERROR"


class SourceOptionsError(ProblemsError):
    """Unknown, missing or malformed options of a ``jdbc_incremental`` read, every problem at once."""

    code = "INVALID_SOURCE_OPTIONS"

    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        super().__init__(f"{len(problems)} problem(s) in the options of the {source} source", problems,
                         code=self.code)


class UnsupportedColumnTypeError(DatabaseSourceError):
    """A column's database type has no Spark type here; the message names the column and the type."""

    code = "UNSUPPORTED_COLUMN_TYPE"


class SourceQueryError(DatabaseSourceError):
    """The database refused a query (unknown table or column, bad SQL, no permission)."""

    code = "SOURCE_QUERY_FAILED"


class SourceConnectionError(DatabaseSourceError):
    """The database could not be reached, or the connection dropped during a read (retryable)."""

    code = "SOURCE_CONNECTION_FAILED"
    retryable = True


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every non-empty secret (a password, a URL holding one) replaced by ``*****``.

    A worker process has no registry of the driver's secrets (``framework.redaction``), so the reader scrubs
    the values it was given itself before an error leaves it.
    """
    for secret in secrets:
        if secret:
            text = text.replace(secret, "*****")
    return text

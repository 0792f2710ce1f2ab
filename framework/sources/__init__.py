"""Database sources: ``jdbc_incremental`` (a Spark Python data source) and the spec's external tables.

:func:`register_sources` registers the data source with a session (the runner calls it before pipeline code
runs; on Databricks a pipeline registers it the same way); :func:`check_read` checks a read's options on the
driver, so that a mistake is a typed error when the flow is defined rather than a Python worker's traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from framework.sources.errors import (
    DatabaseSourceError,
    SourceConnectionError,
    SourceOptionsError,
    SourceQueryError,
    UnsupportedColumnTypeError,
)
from framework.sources.options import SOURCE_NAME

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SOURCE_NAME", "DatabaseSourceError", "SourceConnectionError", "SourceOptionsError", "SourceQueryError",
           "UnsupportedColumnTypeError", "check_read", "register_sources"]


def register_sources(spark: SparkSession) -> None:
    """Register the framework's Python data sources (``jdbc_incremental``) with ``spark``."""
    from framework.sources.jdbc_incremental import JdbcIncrementalDataSource

    spark.dataSource.register(JdbcIncrementalDataSource)


def check_read(source_format: str | None, options: Mapping[str, str]) -> None:
    """Check a read of one of the framework's sources on the driver, before Spark plans it; other formats
    pass. The password given is registered as a secret, so that it never shows in the event log or output.

    Raises:
        SourceOptionsError: unknown, missing or malformed options, all at once.
        DatabaseSourceError: the database cannot be reached, refuses the relation, or has a column of a type
            without a Spark type.
    """
    if (source_format or "").lower() != SOURCE_NAME:
        return
    from framework.redaction import register_secret
    from framework.sources.jdbc_incremental import plan_read

    for key, value in options.items():
        if key.lower() == "password" and value:
            register_secret(value)
    plan_read(options)

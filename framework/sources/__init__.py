"""Database sources: ``jdbc_incremental`` (a Spark Python data source, with a JVM twin for local runs) and the
spec's external tables.

:func:`register_sources` makes ``format("jdbc_incremental")`` readable in a session (the runner calls it before
pipeline code runs; on Databricks a pipeline registers the Python source the same way). Where the framework's
jar is loaded (local and cluster runs of this framework), Spark already finds the JVM twin
(``jvm/src/medallion/sources``) under that name through the jar's ``META-INF/services``: it has the same options,
schema, SQL and offsets, and starts in milliseconds where Spark starts a Python process for every query of a
Python streaming source (about 1.5 s). :func:`register_python_source` adds the Python source under
``jdbc_incremental_python`` beside it, to run what Databricks runs. :func:`check_read` checks a read's options on
the driver, so that a mistake is a typed error when the flow is defined rather than a worker's traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from framework.sources.errors import (
    DatabaseSourceError,
    SourceConnectionError,
    SourceOptionsError,
    SourceQueryError,
    UnsupportedColumnTypeError,
)
from framework.sources.options import PYTHON_SOURCE_NAME, SOURCE_NAME

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["PYTHON_SOURCE_NAME", "SOURCE_NAME", "DatabaseSourceError", "SourceConnectionError", "SourceOptionsError", "SourceQueryError",
           "UnsupportedColumnTypeError", "check_read", "register_python_source", "register_sources"]


def register_sources(spark: SparkSession) -> None:
    """Make ``jdbc_incremental`` readable in ``spark``: the Python data source, unless the framework's jar
    already serves the name with the JVM twin (Spark then refuses a second source of that name)."""
    from pyspark.errors import AnalysisException

    from framework.sources.jdbc_incremental import JdbcIncrementalDataSource

    if framework_jar_loaded(spark):  # Spark would refuse the name only after listing every source it has:
        return  # 0.9-1.0 s of a cold session's start
    try:
        spark.dataSource.register(JdbcIncrementalDataSource)
    except AnalysisException as exc:
        if exc.getCondition() != "DATA_SOURCE_ALREADY_EXISTS":
            raise


def framework_jar_loaded(spark: SparkSession) -> bool:
    """Whether the session has the framework's jar, whose ``META-INF/services`` serve ``jdbc_incremental``."""
    from framework.settings import FRAMEWORK_JAR_PREFIX

    conf = spark.sparkContext.getConf()
    paths = f"{conf.get('spark.jars', '')},{conf.get('spark.driver.extraClassPath', '')}".replace(":", ",")
    return any(Path(p).name.startswith(FRAMEWORK_JAR_PREFIX) for p in paths.split(",") if p)


def register_python_source(spark: SparkSession) -> None:
    """Register the Python source also as ``jdbc_incremental_python`` (what a Databricks pipeline runs), next to
    the JVM twin that serves ``jdbc_incremental`` locally."""
    from framework.sources.jdbc_incremental import JdbcIncrementalPythonDataSource

    spark.dataSource.register(JdbcIncrementalPythonDataSource)


def check_read(source_format: str | None, options: Mapping[str, str]) -> None:
    """Check a read of one of the framework's sources on the driver, before Spark plans it; other formats
    pass. The password given is registered as a secret, so that it never shows in the event log or output.

    Raises:
        SourceOptionsError: unknown, missing or malformed options, all at once.
        DatabaseSourceError: the database cannot be reached, refuses the relation, or has a column of a type
            without a Spark type.
    """
    if (source_format or "").lower() not in (SOURCE_NAME, PYTHON_SOURCE_NAME):
        return
    from framework.redaction import register_secret
    from framework.sources.jdbc_incremental import plan_read

    for key, value in options.items():
        if key.lower() == "password" and value:
            register_secret(value)
    plan_read(options)

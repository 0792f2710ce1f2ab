"""The spec's ``tables``: tables a pipeline reads from outside it, created in the session's catalog so that
``spark.read.table("cdc_data.users")`` and ``spark.readStream.table(...)`` work locally as on Databricks.

A Delta table is registered at its folder (``USING DELTA LOCATION``), a file table (JSON, CSV, Parquet, ...)
as a table over its folder with its reader options and, when given, its schema, and a JDBC table as Spark's
JDBC table over the database (the PostgreSQL driver comes with the set-up). The session's catalog is in memory,
so a JDBC password given here stays in this process; it is registered as a secret, so it never shows in the
event log or the output either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from framework.redaction import register_secret

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.spec import ExternalTable, PipelineSpec


def _ident(name: str) -> str:
    return ".".join(f"`{part.replace('`', '``')}`" for part in name.split("."))


def _string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def create_table_sql(table: ExternalTable) -> str:
    """The ``CREATE TABLE`` statement that registers ``table`` (replacing an earlier registration)."""
    options = dict(table.options)
    if table.format == "delta":
        return f"CREATE TABLE {_ident(table.name)} USING DELTA LOCATION {_string(str(table.path))}"
    if table.path is not None:
        options["path"] = str(table.path)
    columns = f" ({table.schema})" if table.schema else ""
    listed = ", ".join(f"{_string(k)} {_string(v)}" for k, v in sorted(options.items()))
    return f"CREATE TABLE {_ident(table.name)}{columns} USING {table.format} OPTIONS ({listed})"


def register_external_tables(spark: SparkSession, spec: PipelineSpec) -> list[str]:
    """Create every table of ``spec.tables`` in ``spark``'s catalog (schemas included); return their names.

    A table already registered under the same name is replaced, so that an edited spec takes effect in a warm
    session. Nothing is read here: a missing folder or an unreachable database fails the flow that reads it.
    """
    names = []
    for table in spec.tables:
        password = table.options.get("password")
        if password:
            register_secret(password)
        parts = table.name.split(".")
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {_ident('.'.join(parts[:-1]))}")
        spark.sql(f"DROP TABLE IF EXISTS {_ident(table.name)}")
        spark.sql(create_table_sql(table))
        names.append(table.name)
    return names

"""Publishing the pipeline's tables to the local catalog as ``<schema>.<name>`` (a dataset named
``schema.name`` or ``catalog.schema.name``: there, through the catalog's plugin, ``catalogs.py``), so that
``spark.read.table("<schema>.<name>")`` works after an update, as on Databricks."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from framework.runner.reads import catalog_table_name, quote_identifier, split_name
from framework.storage.log import has_commit

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def sql_string(value: str) -> str:
    """A SQL string literal (single quotes, with quotes and backslashes escaped)."""
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def table_identifier(name: str) -> str:
    """The catalog name of dataset ``name``: a name written as one quoted identifier (in backticks, such as
    ``name="`odd.name`"``) is what the backticks hold, dots included; any other name is taken whole."""
    parts = split_name(name)
    return parts[0] if len(parts) == 1 else name


# Spark's session catalog (the local metastore) accepts only these table and schema names: SessionCatalog's
# validateName refuses any other with INVALID_SCHEMA_OR_RELATION_NAME. Unity Catalog allows more (`my table`).
_CATALOG_NAME = re.compile(r"[A-Za-z0-9_]+")


def catalog_name_ok(name: str) -> bool:
    """True when Spark's local catalog accepts ``name`` as a table or schema name."""
    return _CATALOG_NAME.fullmatch(name) is not None


@dataclass(frozen=True)
class PublishedTable:
    """A table to publish: ``[catalog.]schema.name`` at ``path`` (no catalog: the session catalog)."""

    schema: str
    name: str
    path: str
    catalog: str | None = None

    @classmethod
    def of(cls, dataset_name: str, path: str, *, schema: str, catalog: str | None) -> PublishedTable:
        """Dataset ``dataset_name`` of a pipeline publishing to ``catalog.schema``: a name of two or three parts
        says its own schema and catalog (Databricks' default publishing mode)."""
        parts = split_name(dataset_name)
        if len(parts) == 3:
            same = catalog is not None and parts[0].lower() == catalog.lower()
            return cls(parts[1], parts[2], path, None if same else parts[0])
        if len(parts) == 2:
            return cls(parts[0], parts[1], path)
        return cls(schema, dataset_name, path)


@dataclass
class CatalogPublisher:
    """Registers tables in one session's catalog. Remembers what it registered, so that publishing the same
    tables again (every update of a warm session) costs nothing."""

    spark: SparkSession
    _registered: dict[str, str] = field(default_factory=dict)  # quoted table name -> location
    _schemas: set[str] = field(default_factory=set)

    @classmethod
    def for_session(cls, spark: SparkSession) -> CatalogPublisher:
        """The publisher of ``spark`` (one per session: it lives on the session object)."""
        publisher = getattr(spark, "_medallion_catalog", None)
        if not isinstance(publisher, cls):
            publisher = cls(spark)
            spark._medallion_catalog = publisher  # type: ignore[attr-defined]
        return publisher

    def publish(self, tables: Iterable[PublishedTable]) -> list[PublishedTable]:
        """Register every table that has a commit (a table whose first write failed has none: skipped).

        Returns:
            The tables left out because the local catalog refuses their name (see :func:`catalog_name_ok`).
        """
        refused = []
        for table in tables:
            if not has_commit(table.path):
                continue
            if not (catalog_name_ok(table.schema) and catalog_name_ok(table_identifier(table.name))):
                refused.append(table)
                continue
            self._publish(table)
        return refused

    def _publish(self, table: PublishedTable) -> None:
        identifier = table_identifier(table.name)
        schema = quote_identifier(table.schema)
        if table.catalog is not None:
            schema = catalog_table_name(self.spark, f"{quote_identifier(table.catalog)}.{schema}.x").rsplit(".", 1)[0]
        name = f"{schema}.{quote_identifier(identifier)}"
        if self._registered.get(name) == table.path:
            return
        if schema not in self._schemas:
            self.spark.sql(f"CREATE DATABASE IF NOT EXISTS {schema}")
            self._schemas.add(schema)
        if self.spark.catalog.tableExists(name):
            current = self._location(name)
            if current is None or Path(current.removeprefix("file:")).resolve() != Path(table.path).resolve():
                self.spark.sql(f"DROP TABLE IF EXISTS {name}")
        self.spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING DELTA LOCATION {sql_string(table.path)}")
        self._registered[name] = table.path

    def _location(self, name: str) -> str | None:
        """Where the registered table points, or None when that location no longer holds a table."""
        from pyspark.errors import AnalysisException

        try:
            rows = self.spark.sql(f"DESCRIBE DETAIL {name}").select("location").collect()
        except AnalysisException:
            return None
        return str(rows[0][0]) if rows else None

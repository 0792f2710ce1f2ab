"""Unity Catalog names on a local session: one Spark catalog plugin per catalog name a pipeline uses.

Spark's session catalog (``spark_catalog``) has one level of schemas, so ``main.ref.regions`` needs a catalog
named ``main``. The framework's jar has one (``jvm/src/medallion/catalog/LocalCatalog.java``): it keeps the
schemas of catalog ``c`` in the session catalog as databases ``c__<schema>`` and hands every call to Delta's
catalog, so ``spark.read.table``, ``readStream.table``, ``spark.sql``, ``INSERT``, ``MERGE`` and time travel work
on three-part names as on Databricks, with no rewriting of query text. Two catalogs are the session catalog
itself under another name (no prefix): the pipeline's own ``catalog`` (so ``main.sales.orders`` and
``sales.orders`` are one table, as when the current catalog is ``main``) and ``hive_metastore``.

A catalog is registered on first use; Spark keeps the plugin for the session's life, but the plugin reads its
prefix from the session's settings at each call and every update sets them for its own pipeline
(``align_catalogs``), so in a warm session a later pipeline with another catalog maps each catalog its own way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from framework.graph import split_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.spec import PipelineSpec

PLUGIN = "medallion.catalog.LocalCatalog"
SESSION_CATALOG = "spark_catalog"
ALIASES = frozenset({"hive_metastore"})  # the session catalog under another name, whatever the pipeline's catalog
DEFAULT_PUBLISHING_MODE = "DEFAULT_PUBLISHING_MODE"
LEGACY_PUBLISHING_MODE = "LEGACY_PUBLISHING_MODE"


def publishing_mode(spec: PipelineSpec) -> str:
    """Databricks' ``effective_publishing_mode``: legacy when the spec sets the legacy ``target``."""
    return LEGACY_PUBLISHING_MODE if spec.legacy_target else DEFAULT_PUBLISHING_MODE


def catalog_of(name: str) -> str | None:
    """The catalog part of a three-part name, else None."""
    parts = split_name(name)
    return parts[0] if len(parts) == 3 else None


def ensure_catalog(spark: SparkSession, name: str, *, default: str | None = None) -> bool:
    """Make catalog ``name`` resolvable in ``spark`` (see the module's docstring); True when it is.

    ``default`` is the pipeline's catalog: that one is the session catalog under its name. Without the
    framework's jar (no JDK at set-up) no catalog can be added and False is returned.
    """
    from framework.sources import framework_jar_loaded

    if name.lower() == SESSION_CATALOG:
        return True
    key = f"spark.sql.catalog.{name}"
    if spark.conf.get(key, None):
        return True
    if not framework_jar_loaded(spark):
        return False
    if name.lower() in ALIASES or (default is not None and name.lower() == default.lower()):
        spark.conf.set(f"{key}.database-prefix", "")
    spark.conf.set(key, PLUGIN)
    return True


def is_alias(spark: SparkSession, name: str) -> bool:
    """Whether catalog ``name`` is the session catalog under another name (see the module's docstring)."""
    return name.lower() == SESSION_CATALOG or spark.conf.get(f"spark.sql.catalog.{name}.database-prefix", None) == ""


def align_catalogs(spark: SparkSession, default: str | None) -> None:
    """Map every catalog registered so far as a pipeline with catalog ``default`` does (see the module's
    docstring): the plugin reads its prefix from these settings at each call, so a warm session's earlier
    pipeline leaves no mapping behind."""
    for key, value in dict(spark.conf.getAll).items():
        if value != PLUGIN or not key.startswith("spark.sql.catalog.") or key.count(".") != 3:
            continue
        name = key.rsplit(".", 1)[1]
        if name.lower() in ALIASES or (default is not None and name.lower() == default.lower()):
            spark.conf.set(f"{key}.database-prefix", "")
        else:
            spark.conf.unset(f"{key}.database-prefix")


def ensure_catalogs(spark: SparkSession, spec: PipelineSpec, names: Iterable[str] = ()) -> None:
    """Register the pipeline's catalog and the catalogs of ``names`` (three-part names; others are skipped),
    after mapping the catalogs an earlier pipeline of the session registered as this one does."""
    align_catalogs(spark, spec.catalog)
    if spec.catalog:
        ensure_catalog(spark, spec.catalog, default=spec.catalog)
    for name in names:
        catalog = catalog_of(name)
        if catalog is not None:
            ensure_catalog(spark, catalog, default=spec.catalog)


def session_database(spark: SparkSession, catalog: str, schema: str) -> str:
    """The session catalog's database that holds schema ``schema`` of the framework's catalog ``catalog``."""
    prefix = spark.conf.get(f"spark.sql.catalog.{catalog}.database-prefix", None)
    return f"{f'{catalog}__' if prefix is None else prefix}{schema}"


def session_function_sql(spark: SparkSession, text: str, *, default: str | None = None) -> str:
    """``text`` with the three-part name of a CREATE, DROP or DESCRIBE FUNCTION statement in one of the
    framework's catalogs given its session-catalog name (``dev.util.f`` -> ``spark_catalog.dev__util.f``; see
    ``framework/sql/functions.py``); any other statement as it is. The catalog is registered if it is not yet,
    also the catalog of ``CREATE SCHEMA catalog.schema``.
    """
    from framework.sql.functions import function_name, schema_catalog

    if (catalog_named := schema_catalog(text)) is not None:  # CREATE SCHEMA c.s: c can only be a catalog
        ensure_catalog(spark, catalog_named, default=default)
        return text
    name = function_name(text)
    if name is None or len(name.parts) != 3 or name.parts[0].lower() in (SESSION_CATALOG, "system"):
        return text
    catalog, schema, function = name.parts
    if not ensure_catalog(spark, catalog, default=default) or spark.conf.get(
            f"spark.sql.catalog.{catalog}", None) != PLUGIN:
        return text  # not one of the framework's catalogs: Spark decides
    parts = (SESSION_CATALOG, session_database(spark, catalog, schema), function)
    local = ".".join("`" + p.replace("`", "``") + "`" for p in parts)
    return text[:name.start] + local + text[name.end:]

"""Database-source tests: a PostgreSQL database per test (framework.testing.postgres), the example pipelines'
specs pointed at it, and the framework's data sources registered with the shared session (until the runner
registers them itself)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from framework.runner.update import UpdateOptions, UpdateResult, run_update
from framework.sources import register_sources
from framework.sources.external import register_external_tables
from framework.spec import PipelineSpec, load_spec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.testing.postgres import PostgresDatabase

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _sources(spark: SparkSession) -> None:
    register_sources(spark)


@pytest.fixture
def shop_secret(postgres_db: PostgresDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    """The database password where the example pipelines read it (dbutils.secrets.get("shop", "password"))."""
    monkeypatch.setenv("DATABRICKS_SECRET_SHOP_PASSWORD", postgres_db.password)


def example_spec(name: str, db: PostgresDatabase, storage: Path, **configuration: str) -> PipelineSpec:
    """conf/db_<name>.yaml pointed at ``db``, with its storage under the test's folder."""
    conf = {"shop.jdbc_url": db.url, "shop.user": db.user, **configuration}
    return load_spec(REPO / "conf" / f"db_{name}.yaml", overrides={"storage": str(storage), "configuration": conf})


def update(spec: PipelineSpec, spark: SparkSession, **options: Any) -> UpdateResult:
    """One update (external tables of the spec registered first), its output kept out of the test log."""
    register_external_tables(spark, spec)
    return run_update(spec, UpdateOptions(out=io.StringIO(), **options), spark=spark)


def rows(spark: SparkSession, spec: PipelineSpec, table: str, order: str) -> list[tuple[Any, ...]]:
    """The rows of one of the pipeline's tables, as tuples, ordered."""
    df = spark.read.format("delta").load(str(spec.tables_dir / table)).orderBy(*order.split(","))
    return [tuple(r) for r in df.collect()]

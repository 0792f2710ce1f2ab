"""Pytest fixtures: one shared SparkSession for the whole test run, a fresh storage root per test.

Tests that need no Spark never start it: the session is built lazily by the first test that asks for ``spark``.
``postgres`` / ``postgres_db`` (``framework.testing.postgres``) start a throwaway PostgreSQL cluster the same way,
only for the tests that ask for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.testing.postgres import postgres, postgres_db

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The shared local SparkSession with the tuned settings of ``conf/spark.yaml`` and Delta enabled."""
    from framework.runner.session import get_or_create_session

    session = get_or_create_session()
    yield session
    session.stop()


@pytest.fixture
def storage(tmp_path: Path) -> Path:
    """A fresh pipeline storage root for one test."""
    root = tmp_path / "storage"
    root.mkdir()
    return root


__all__ = ["postgres", "postgres_db", "spark", "storage"]

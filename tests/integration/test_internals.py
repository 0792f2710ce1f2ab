"""Smoke checks of every private Spark, Delta and PySpark entry point the framework calls
(``framework/internals.py``): a release that breaks one fails here, naming it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.internals import ENTRY_POINTS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("entry_point", sorted(ENTRY_POINTS))
def test_private_entry_point_still_works(spark: SparkSession, tmp_path: Path, entry_point: str) -> None:
    try:
        ENTRY_POINTS[entry_point](spark, str(tmp_path / "t"))
    except Exception as exc:  # any failure: the entry point changed under us
        pytest.fail(f"private entry point broken: {entry_point}: {type(exc).__name__}: {exc}"[:2000])

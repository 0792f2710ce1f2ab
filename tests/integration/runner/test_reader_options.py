"""Reader options given with ``.table(name)`` are honoured (issue 18): Delta's change data feed of a pipeline
table, read as a stream, as Databricks' CDC documentation does."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.runner.update import UpdateOptions, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PIPELINE = """
import dlt

@dlt.table(table_properties={"delta.enableChangeDataFeed": "true"})
def users():
    return spark.readStream.format("json").schema("id BIGINT, name STRING").load(spark.conf.get("landing"))

@dlt.table
def user_changes():
    return (spark.readStream.option("readChangeFeed", "true").table("users")
            .select("id", "name", "_change_type", "_commit_version"))
"""


def test_read_change_feed_option_reaches_the_read(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id": 1, "name": "a"}', '{"id": 2, "name": "b"}'])
    spec = make_pipeline(tmp_path, {"p.py": PIPELINE}, {"landing": str(landing)})
    first = run_update(spec, UpdateOptions(), spark=spark)
    assert first.succeeded, first.error or [f.error for f in first.flows]
    write_json_lines(landing, "b.json", ['{"id": 3, "name": "c"}'])
    second = run_update(spec, UpdateOptions(), spark=spark)
    assert second.succeeded, second.error or [f.error for f in second.flows]
    rows = spark.read.format("delta").load(str(spec.tables_dir / "user_changes")).collect()
    # version 0 creates the table with its change data feed on (its first commit must have it)
    assert sorted((r.id, r._change_type, r._commit_version) for r in rows) == [
        (1, "insert", 1), (2, "insert", 1), (3, "insert", 2)]

"""A full refresh keeps each table and its Delta history, as Databricks does.

Databricks: "A full refresh of a streaming table ... truncates the streaming table, removes all checkpoint data,
and restarts the streaming process with new checkpoints for every flow writing to the table"
(``ldp/full-refresh-st``); ``REFRESH ... FULL`` "truncates the table and processes all data available in the
source with the latest definition of the streaming table"; a materialized view's full refresh "recomputes
results". Truncating is a commit, so the version numbers go on and time travel to the versions before the
refresh still reads the old data; the new content and schema are those of a fresh run of the new definition.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from framework.runner.update import UpdateOptions, UpdateResult, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.spec import PipelineSpec

pytestmark = pytest.mark.spark

BEFORE = """
import dlt
from pyspark.sql import functions as F

@dlt.table(cluster_by=["id"])
def events():
    return (spark.readStream.format("json").schema("id BIGINT, amount DOUBLE, note STRING")
            .load(spark.conf.get("landing")))

@dlt.table
def plain_events():
    return dlt.read_stream("events").select("id", "amount")

@dlt.table
def totals():
    return dlt.read("events").agg(F.sum("amount").alias("total"))
"""

# the new definition: a column dropped, one added, a type changed
AFTER = BEFORE.replace('.load(spark.conf.get("landing")))',
                       '.load(spark.conf.get("landing")).drop("note").withColumn("big", F.col("amount") > 5))') \
    .replace('select("id", "amount")', 'select(F.col("id").cast("string").alias("id"), "big")')


def _update(spec: PipelineSpec, spark: SparkSession, **options: Any) -> UpdateResult:
    result = run_update(spec, UpdateOptions(out=io.StringIO(), **options), spark=spark)
    assert result.succeeded, result.error or [f.error for f in result.flows if f.error]
    return result


def _history(spark: SparkSession, path: Path) -> list[tuple[int, str]]:
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").select("version", "operation").collect()
    return sorted((int(r.version), str(r.operation)) for r in rows)


def _content(spark: SparkSession, path: Path) -> tuple[list[tuple[str, str]], list[str]]:
    df = spark.read.format("delta").load(str(path))
    return [(f.name, f.dataType.simpleString()) for f in df.schema.fields], sorted(map(repr, df.collect()))


def test_full_refresh_continues_history_and_equals_a_fresh_run(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "1.json", ['{"id": 1, "amount": 2.0, "note": "a"}', '{"id": 2, "amount": 7.0}'])
    spec = make_pipeline(tmp_path / "p", {"p.py": BEFORE}, {"landing": str(landing)})
    _update(spec, spark)
    write_json_lines(landing, "2.json", ['{"id": 3, "amount": 9.0, "note": "c"}'])
    _update(spec, spark)
    tables = {name: spec.tables_dir / name for name in ("events", "plain_events", "totals")}
    before = {name: _history(spark, path) for name, path in tables.items()}
    old = {name: _content(spark, path) for name, path in tables.items()}
    events_before = spark.read.format("delta").load(str(spec.events_dir)).select("origin.update_id").distinct()
    assert events_before.count() == 2

    (tmp_path / "p" / "pipeline" / "p.py").write_text(textwrap.dedent(AFTER))
    _update(spec, spark, full_refresh=True)

    fresh_spec = make_pipeline(tmp_path / "fresh", {"p.py": AFTER}, {"landing": str(landing)})
    _update(spec=fresh_spec, spark=spark)
    for name, path in tables.items():
        history = _history(spark, path)
        last_before = before[name][-1][0]
        assert history[:len(before[name])] == before[name], name  # the old versions are still there
        assert history[-1][0] > last_before, name  # the refresh's commits continue the numbering
        old_version = spark.read.format("delta").option("versionAsOf", last_before).load(str(path))
        assert ([(f.name, f.dataType.simpleString()) for f in old_version.schema.fields],
                sorted(map(repr, old_version.collect()))) == old[name], name  # time travel reads the old data
        assert _content(spark, path) == _content(spark, fresh_spec.tables_dir / name), name
    assert _content(spark, tables["events"])[0] == [("id", "bigint"), ("amount", "double"), ("big", "boolean")]
    # the event log keeps the updates before the refresh
    assert spark.read.format("delta").load(str(spec.events_dir)).select("origin.update_id").distinct().count() == 3

    write_json_lines(landing, "3.json", ['{"id": 4, "amount": 1.0}'])  # incremental again after the refresh
    after = _update(spec, spark)
    assert after.flow("events").num_input_rows == 1
    assert len(spark.read.format("delta").load(str(tables["plain_events"])).collect()) == 4

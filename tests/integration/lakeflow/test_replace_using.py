"""REPLACE USING flows (issue 36) with Databricks' documented example (``ldp/flows-replace-using``): regions 1
and 3 updated, region 2 untouched, region 3's lower-sequence row ignored; then a same-sequence row appended and
a lower-sequence one ignored; ``@dp.replace_flow`` and ``@dp.table(replace_using=..., sequence_by=...)`` and SQL's ``INSERT INTO t BY NAME REPLACE USING (...)
SEQUENCE BY ...``; a
key column the query lacks is an error naming the dataset, file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from framework.runner.update import UpdateOptions, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

pytestmark = pytest.mark.spark

PIPELINE = '''
from pyspark import pipelines as dp
from pyspark.sql import functions as F

def events():
    return (spark.readStream.format("json").schema("region_id int, device_type string, event_type string, seq int")
            .load(spark.conf.get("landing")))

dp.create_streaming_table("events")

@dp.replace_flow(target="events", replace_using=["region_id"], sequence_by="seq")
def partial_snapshots():
    return events()

@dp.table(replace_using=["region_id", "device_type"], sequence_by=F.col("seq"))
def by_device():
    return events()
'''

SQL = """
CREATE OR REFRESH STREAMING TABLE events_sql;
CREATE FLOW snapshots_sql AS INSERT INTO events_sql BY NAME REPLACE USING (region_id) SEQUENCE BY seq
SELECT * FROM STREAM read_files('{landing}', format => 'json',
                                schema => 'region_id int, device_type string, event_type string, seq int');
"""

BAD = '''
from pyspark import pipelines as dp

@dp.table(replace_using=["region"], sequence_by="seq")
def t():
    return spark.readStream.format("rate").load().selectExpr("value AS region_id", "value AS seq")
'''


def _rows(spark, spec, table: str) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    df = spark.read.format("delta").load(str(spec.tables_dir / table))
    return sorted(tuple(r) for r in df.select("region_id", "device_type", "event_type", "seq").collect())


def _batch(landing: Path, name: str, rows: list[tuple[int, str, str, int]]) -> None:
    write_json_lines(landing, name, [json.dumps(dict(zip(("region_id", "device_type", "event_type", "seq"), r,
                                                         strict=True))) for r in rows])


def test_documented_example(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing = tmp_path / "landing"
    _batch(landing, "0.json", [(1, "iOS", "click", 1), (1, "Android", "conversion", 1), (2, "iOS", "click", 1),
                               (2, "desktop", "click", 1)])
    spec = make_pipeline(tmp_path, {"p.py": PIPELINE, "p.sql": SQL.format(landing=landing)},
                         {"landing": str(landing)})
    for batch, rows in [("1.json", [(1, "iOS", "click", 2), (1, "Android", "conversion", 2),
                                    (1, "desktop", "click", 2), (3, "iOS", "click", 1), (3, "desktop", "click", 2)]),
                        ("2.json", [(2, "Android", "click", 1), (1, "iOS", "conversion", 1)])]:
        first = run_update(spec, UpdateOptions(), spark=spark)
        assert first.succeeded, first.error or [f.error for f in first.flows]
        _batch(landing, batch, rows)
    last = run_update(spec, UpdateOptions(), spark=spark)
    assert last.succeeded, last.error or [f.error for f in last.flows]
    assert _rows(spark, spec, "events") == sorted([
        (1, "iOS", "click", 2), (1, "Android", "conversion", 2), (1, "desktop", "click", 2),  # replaced
        (2, "iOS", "click", 1), (2, "desktop", "click", 1),  # untouched by the documented batch
        (2, "Android", "click", 1),  # the same sequence as region 2's: appended
        (3, "desktop", "click", 2)])  # region 3's seq 1 row lost to its seq 2 row
    assert _rows(spark, spec, "events_sql") == _rows(spark, spec, "events")  # SQL's REPLACE USING
    assert _rows(spark, spec, "by_device") == sorted([  # keyed by (region, device)
        (1, "iOS", "click", 2), (1, "Android", "conversion", 2), (1, "desktop", "click", 2),
        (2, "iOS", "click", 1), (2, "desktop", "click", 1), (2, "Android", "click", 1), (3, "iOS", "click", 1),
        (3, "desktop", "click", 2)])

    bad = make_pipeline(tmp_path / "bad", {"bad.py": BAD})
    result = run_update(bad, UpdateOptions(), spark=spark)
    error = result.flow("t").error
    assert error is not None and error.code == "REPLACE_USING_COLUMN_MISSING"
    assert "'t'" in str(error) and "region" in str(error) and "bad.py:4" in str(error)


def test_a_replayed_batch_writes_nothing(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A micro-batch replayed after a crash (same query id and batch id) finds its commit: the same-sequence rows
    it would append are not appended twice, on the first write and on a MERGE."""
    from framework.runner.replace_using import replace_batch

    path = str(tmp_path / "t")
    schema = "region_id int, device_type string, event_type string, seq int"
    first = spark.createDataFrame([(1, "a", "x", 1), (2, "b", "y", 1)], schema)
    second = spark.createDataFrame([(1, "c", "z", 1)], schema)  # region 1 at the same sequence: appended
    for batch_id, batch in ((0, first), (0, first), (1, second), (1, second)):
        replace_batch(spark, path, batch, ("region_id",), "seq", txn=("query-1", batch_id))
    rows = sorted(tuple(r) for r in spark.read.format("delta").load(path).collect())
    assert rows == [(1, "a", "x", 1), (1, "c", "z", 1), (2, "b", "y", 1)]

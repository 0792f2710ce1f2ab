"""Small micro-batches of streaming tables are committed by the driver (framework/storage/appends.py): the table is the
Delta table Delta's streaming sink would have written (rows, comment and properties, expectation metrics), a
batch the driver must not write goes through Spark, and a replayed batch is skipped whichever path committed it
(the same ``txn`` app id as Delta's sink)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from framework.runner.update import UpdateOptions, UpdateResult, run_update
from framework.spec import PipelineSpec
from framework.storage.appends import BatchAppender
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

pytestmark = pytest.mark.spark

STREAMS = """
import dlt

@dlt.table(comment="orders as landed", table_properties={"quality": "bronze"})
@dlt.expect_or_drop("positive", "amount > 0")
def orders():
    return spark.readStream.format("json").schema("id bigint, amount double").load(spark.conf.get("landing"))

@dlt.table(partition_cols=["id"])
def by_id():
    return dlt.read_stream("orders")
"""


def _update(spec: PipelineSpec, spark: SparkSession) -> UpdateResult:
    result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert result.succeeded, (result.error, [(f.flow, f.error) for f in result.flows if f.error])
    return result


def _commits(path: Path) -> list[list[dict[str, Any]]]:
    return [[json.loads(line) for line in c.read_text().splitlines()]
            for c in sorted((path / "_delta_log").glob("*.json"))]


def _engine(commit: list[dict[str, Any]]) -> str:
    return str(commit[0]["commitInfo"].get("engineInfo", ""))


def test_small_batches_are_committed_by_the_driver_as_the_sink_would(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id":1,"amount":2.5}', '{"id":2,"amount":-1.0}', '{"id":3,"amount":1.0}'])
    spec = make_pipeline(tmp_path, {"p.py": STREAMS}, {"landing": str(landing)})
    first = {f.flow: f for f in _update(spec, spark).flows}
    assert (first["orders"].num_output_rows, first["orders"].dropped_records) == (2, 1)
    write_json_lines(landing, "b.json", ['{"id":4,"amount":0.5}'])
    second = {f.flow: f for f in _update(spec, spark).flows}
    assert (second["orders"].num_input_rows, second["orders"].num_output_rows) == (1, 1)

    orders = spec.tables_dir / "orders"
    assert sorted(r.id for r in spark.read.format("delta").load(str(orders)).collect()) == [1, 3, 4]
    commits = _commits(orders)
    assert len(commits) == 2 and all(_engine(c).startswith("medallion-framework") for c in commits)
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{orders}`").first()
    assert detail.description == "orders as landed" and detail.properties == {"quality": "bronze"}  # in the first commit
    query_id = json.loads((spec.checkpoints_dir / "orders" / "orders" / "metadata").read_text())["id"]
    assert [a["txn"]["appId"] for c in commits for a in c if "txn" in a] == [query_id, query_id]
    history = spark.sql(f"DESCRIBE HISTORY delta.`{orders}`").orderBy("version").collect()
    assert [(h.operation, h.operationParameters["epochId"]) for h in history] == [
        ("STREAMING UPDATE", "0"), ("STREAMING UPDATE", "1")]  # as Delta's streaming sink shows its commits
    by_id = spec.tables_dir / "by_id"  # a partitioned table: Delta's sink
    assert all(_engine(c).startswith("Apache-Spark") for c in _commits(by_id))
    assert spark.read.format("delta").load(str(by_id)).count() == 3


def _stream(spark: SparkSession, source: Path, checkpoint: Path, sink: Any) -> None:
    df = spark.readStream.format("json").schema("id bigint").load(str(source))
    writer = df.writeStream.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
    query = writer.foreachBatch(sink).start() if callable(sink) else writer.format("delta").start(str(sink))
    query.awaitTermination()


def _forget_last_batch(checkpoint: Path) -> None:
    """What a kill -9 after the table's commit and before the checkpoint's commit leaves."""
    last = max((checkpoint / "commits").glob("[0-9]*"), key=lambda p: int(p.name))
    last.unlink()


@pytest.mark.parametrize("max_bytes", [64 << 20, 1], ids=["driver", "spark"])
def test_a_replayed_batch_is_skipped_whichever_path_committed_it(spark: SparkSession, tmp_path: Path,
                                                                  max_bytes: int) -> None:
    source, checkpoint, table = tmp_path / "in", tmp_path / "cp", tmp_path / "t"
    write_json_lines(source, "a.json", ['{"id":1}', '{"id":2}'])
    _stream(spark, source, checkpoint, table)  # batch 0 by Delta's streaming sink (as before this module)
    _forget_last_batch(checkpoint)
    appender = BatchAppender(str(table), str(checkpoint), max_bytes)
    _stream(spark, source, checkpoint, appender)  # batch 0 again: skipped
    assert spark.read.format("delta").load(str(table)).count() == 2 and len(_commits(table)) == 1

    write_json_lines(source, "b.json", ['{"id":3}'])
    _stream(spark, source, checkpoint, appender)  # batch 1, by the appender
    _forget_last_batch(checkpoint)
    _stream(spark, source, checkpoint, BatchAppender(str(table), str(checkpoint), max_bytes))
    assert sorted(r.id for r in spark.read.format("delta").load(str(table)).collect()) == [1, 2, 3]
    engines = [_engine(c) for c in _commits(table)]
    assert len(engines) == 2 and engines[1].startswith("medallion" if max_bytes > 1 else "Apache-Spark")
    assert appender.driver_batches == (1 if max_bytes > 1 else 0)


def test_a_batch_with_a_new_column_is_merged_by_spark(spark: SparkSession, tmp_path: Path) -> None:
    source, checkpoint, table = tmp_path / "in", tmp_path / "cp", tmp_path / "t"
    write_json_lines(source, "a.json", ['{"id":1}'])
    _stream(spark, source, checkpoint, BatchAppender(str(table), str(checkpoint), 64 << 20))
    shutil.rmtree(checkpoint)
    write_json_lines(source, "b.json", ['{"id":2,"name":"x"}'])
    df = spark.readStream.format("json").schema("id bigint, name string").load(str(source))
    appender = BatchAppender(str(table), str(checkpoint), 64 << 20)
    df.writeStream.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).foreachBatch(
        appender).start().awaitTermination()
    rows = spark.read.format("delta").load(str(table))
    assert rows.columns == ["id", "name"] and appender.driver_batches == 0
    assert sorted((r.id, r.name) for r in rows.collect()) == [(1, None), (1, None), (2, "x")]

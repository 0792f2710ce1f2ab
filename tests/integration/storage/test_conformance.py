"""One conformance suite for every kind of table the framework writes, whichever engine committed it (issue 35).

A pipeline writes streaming tables (plain, with the change data feed, partitioned, with column mapping and
deletion vectors), a materialized view, SCD 1 and SCD 2 targets, a table whose expectation drops rows and the
event log, over three updates: small batches (committed by the driver), a batch forced through Spark's writer,
and small batches again on top of Spark's commits. Then, for every table:

* delta-spark reads it whole, its history (one entry per log version) and ``DESCRIBE DETAIL``;
* delta-rs (``deltalake``, the other implementation of the protocol) reads every version, and delta-spark's
  ``VERSION AS OF`` of that version holds the same rows;
* on a copy, delta-rs writes a checkpoint and ``_last_checkpoint`` that delta-spark then reads, and delta-spark
  runs ``OPTIMIZE``, ``VACUUM`` and a ``MERGE``; ``readChangeFeed`` reads every change where the feed is on.
"""

from __future__ import annotations

import dataclasses
import io
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from framework.runner.update import UpdateOptions, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.spec import PipelineSpec

pytestmark = pytest.mark.spark

PIPELINE = """
import dlt
from pyspark.sql import functions as F

@dlt.table
def events():
    return (spark.readStream.format("json").schema("id BIGINT, amount DOUBLE, kind STRING, seq BIGINT")
            .load(spark.conf.get("landing")))

@dlt.table(table_properties={"delta.enableChangeDataFeed": "true"})
def events_cdf():
    return dlt.read_stream("events")

@dlt.table(partition_cols=["kind"])
def events_by_kind():
    return dlt.read_stream("events")

@dlt.table(table_properties={"delta.columnMapping.mode": "name", "delta.enableDeletionVectors": "true"})
def events_mapped():
    return dlt.read_stream("events").withColumnRenamed("amount", "amount value")

@dlt.table
@dlt.expect_or_drop("positive", "amount > 0")
def valid_events():
    return dlt.read_stream("events")

@dlt.table
def totals():
    return dlt.read("events").groupBy("kind").agg(F.sum("amount").alias("total"), F.count("*").alias("n"))

dlt.create_streaming_table("scd1")
dlt.apply_changes(target="scd1", source="events", keys=["id"], sequence_by="seq")

dlt.create_streaming_table("scd2")
dlt.apply_changes(target="scd2", source="events", keys=["id"], sequence_by="seq", stored_as_scd_type=2)
"""
TABLES = ("events", "events_cdf", "events_by_kind", "events_mapped", "valid_events", "totals", "scd1", "scd2")


def _rows(first: int, count: int, seq: int) -> list[str]:
    return [f'{{"id": {i % 50}, "amount": {(i % 7) - 1}.5, "kind": "k{i % 3}", "seq": {seq * 100_000 + i}}}'
            for i in range(first, first + count)]


def _update(spec: PipelineSpec, spark: SparkSession) -> None:
    result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert result.succeeded, (result.error, [(f.flow, f.error) for f in result.flows if f.error])


def _spark_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next update's flows commit through Spark only: no batch is small enough for the driver."""
    from framework import settings
    from framework.runner import environment

    real = settings.load_local_settings

    def spark_only() -> Any:
        loaded = real()
        return dataclasses.replace(loaded, small_updates=dataclasses.replace(loaded.small_updates, max_input_bytes=0))
    monkeypatch.setattr(environment, "load_local_settings", spark_only)


@pytest.fixture(scope="module")
def written(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("conformance")
    landing = root / "landing"
    spec = make_pipeline(root, {"p.py": PIPELINE}, {"landing": str(landing)})
    write_json_lines(landing, "1.json", _rows(0, 40, 1))
    _update(spec, spark)
    write_json_lines(landing, "2.json", _rows(40, 3000, 2))
    with pytest.MonkeyPatch.context() as patch:
        _spark_only(patch)
        _update(spec, spark)
    write_json_lines(landing, "3.json", _rows(3040, 30, 3))
    _update(spec, spark)
    return {**{name: spec.tables_dir / name for name in TABLES}, "event_log": spec.events_dir}


def _engines(path: Path) -> set[str]:
    import json

    return {"driver" if "driver commit" in json.loads(c.read_text().splitlines()[0])["commitInfo"].get(
        "engineInfo", "") else "spark" for c in (path / "_delta_log").glob("*.json")}


def _comparable(values: list[dict[str, Any]]) -> list[str]:
    """Rows as sorted strings of their plain values (timestamps and nested values as their text)."""
    return sorted(repr(sorted((k, str(v)) for k, v in row.items())) for row in values)


def _spark_version(spark: SparkSession, path: Path, version: int) -> list[dict[str, Any]]:
    df = spark.read.format("delta").option("versionAsOf", version).load(str(path))
    plain = [c for c, t in df.dtypes if t in ("bigint", "int", "double", "string", "boolean")]
    return [row.asDict() for row in df.select(*plain).collect()]


def _rs_query(path: Path, sql: str, version: int | None = None) -> Any:
    """A pyarrow Table of ``sql`` over table ``t`` (version ``version``) through delta-rs's query engine, which
    reads deletion vectors and column mapping (its ``to_pyarrow_table`` refuses both)."""
    import pyarrow as pa
    from deltalake import DeltaTable, QueryBuilder

    table = DeltaTable(str(path)) if version is None else DeltaTable(str(path), version=version)
    return pa.table(QueryBuilder().register("t", table).execute(sql).read_all())


def _rs_version(path: Path, version: int, columns: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = _rs_query(path, "SELECT * FROM t", version).select(columns).to_pylist()
    return rows


def _rs_count(path: Path) -> int:
    return int(_rs_query(path, "SELECT count(*) AS n FROM t").column("n")[0].as_py())


def test_both_engines_committed(written: dict[str, Path]) -> None:
    assert _engines(written["events"]) == {"driver", "spark"}
    assert "spark" in _engines(written["scd2"])


@pytest.mark.parametrize("name", [*TABLES, "event_log"])
def test_delta_spark_and_delta_rs_agree_on_every_version(spark: SparkSession, written: dict[str, Path],
                                                         name: str) -> None:
    from deltalake import DeltaTable

    path = written[name]
    latest = DeltaTable(str(path)).version()
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").count()
    assert history == latest + 1, f"{name}: {history} history entries for versions 0..{latest}"
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()[0]
    assert detail.format == "delta"
    assert spark.read.format("delta").load(str(path)).count() == _rs_count(path)
    for version in range(latest + 1):
        ours = _spark_version(spark, path, version)
        columns = sorted(ours[0]) if ours else []
        theirs = _rs_version(path, version, columns) if columns else []
        assert _comparable(ours) == _comparable(theirs), f"{name} version {version}: delta-spark and delta-rs differ"


@pytest.mark.parametrize("name", ["events_by_kind", "events_mapped", "scd2", "event_log"])
def test_checkpoint_optimize_vacuum_merge_on_a_copy(spark: SparkSession, written: dict[str, Path], name: str,
                                                    tmp_path: Path) -> None:
    from deltalake import DeltaTable

    copy = tmp_path / name
    shutil.copytree(written[name], copy)
    rows = spark.read.format("delta").load(str(copy)).count()
    DeltaTable(str(copy)).create_checkpoint()
    assert (copy / "_delta_log" / "_last_checkpoint").exists()
    assert spark.read.format("delta").load(str(copy)).count() == rows
    spark.sql(f"OPTIMIZE delta.`{copy}`")
    spark.sql(f"VACUUM delta.`{copy}`")
    assert spark.read.format("delta").load(str(copy)).count() == rows
    from delta.tables import DeltaTable as SparkTable

    target = spark.read.format("delta").load(str(copy))
    one = target.select("id").limit(1)
    SparkTable.forPath(spark, str(copy)).alias("t").merge(one.alias("s"), "t.id = s.id").whenMatchedDelete().execute()
    assert spark.read.format("delta").load(str(copy)).count() < rows
    after = spark.read.format("delta").load(str(copy)).count()
    assert _rs_count(copy) == after  # delta-rs reads Spark's OPTIMIZE, VACUUM and MERGE


def test_change_data_feed_reads_every_change(spark: SparkSession, written: dict[str, Path]) -> None:
    path = written["events_cdf"]
    changes = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).load(str(path))
    inserted = changes.filter("_change_type = 'insert'").drop("_change_type", "_commit_version", "_commit_timestamp")
    table = spark.read.format("delta").load(str(path))
    assert inserted.count() == table.count() == 3070
    assert inserted.exceptAll(table).count() == 0


def test_flow_progress_says_which_engine_committed(spark: SparkSession, written: dict[str, Path]) -> None:
    import json

    events = spark.read.format("delta").load(str(written["event_log"]))
    rows = (events.filter("event_type = 'flow_progress' AND origin.flow_name = 'events'")
            .orderBy("timestamp", "sequence.control_plane_seq_no").select("details").collect())
    completed = [progress for progress in (json.loads(r.details)["flow_progress"] for r in rows)
                 if progress["status"] == "COMPLETED"]
    # update 1 and 3: small batches, committed by the driver; update 2: forced through Spark
    assert [c.get("commits") for c in completed] == [{"driver": 1}, {"spark": 1}, {"driver": 1}]
    # the storage policy's reason for the one Spark commit (framework/storage/policy.py)
    reasons = [c.get("spark_commit_reason") for c in completed]
    assert reasons[0] is None and reasons[2] is None and "max_input_bytes" in reasons[1], reasons

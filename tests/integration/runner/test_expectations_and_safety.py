"""expect_or_fail is atomic and isolates failures; updates are exclusive and survive being killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from framework.errors import ConcurrentUpdateError
from framework.runner.update import UpdateOptions, run_update, update_lock
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

pytestmark = pytest.mark.spark

FAILING = """
import dlt

@dlt.table
@dlt.expect_or_fail("non_null_id", "id IS NOT NULL")
def checked():
    return spark.readStream.format("json").schema("id bigint, amount double").load(spark.conf.get("landing"))

@dlt.table
def downstream():
    return dlt.read_stream("checked")

@dlt.table
@dlt.expect_all_or_fail({"amount_known": "amount IS NOT NULL"})
def snapshot_mv():
    return spark.read.format("json").schema("id bigint, amount double").load(spark.conf.get("landing"))

@dlt.table
def independent():
    return spark.range(3).withColumnRenamed("id", "n")
"""


def test_expect_or_fail_rolls_back_and_isolates(spark, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id":1,"amount":1}', '{"id":2,"amount":2}'])
    spec = make_pipeline(tmp_path, {"p.py": FAILING}, {"landing": str(landing)})
    assert run_update(spec, UpdateOptions(), spark=spark).succeeded
    table = spec.tables_dir / "checked"
    version_before = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").agg({"version": "max"}).first()[0]
    offsets = spec.checkpoints_dir / "checked" / "checked" / "offsets"
    commits = spec.checkpoints_dir / "checked" / "checked" / "commits"
    commits_before = sorted(p.name for p in commits.glob("[0-9]*"))
    assert offsets.exists()

    write_json_lines(landing, "b.json", ['{"id":3,"amount":3}', '{"id":null,"amount":null}'])
    result = run_update(spec, UpdateOptions(), spark=spark)
    assert not result.succeeded
    checked = result.flow("checked")
    assert checked.status == "FAILED"
    assert getattr(checked.error, "code", None) == "EXPECTATION_VIOLATION"
    message = str(checked.error)
    assert "Flow 'checked'" in message and "'non_null_id'" in message
    assert '{"id":null,"amount":null}' in message  # the offending record
    assert result.flow("downstream").status == "SKIPPED"
    assert result.flow("independent").status == "COMPLETED"
    assert result.flow("snapshot_mv").status == "FAILED"
    assert "amount_known" in str(result.flow("snapshot_mv").error)
    # nothing committed, checkpoint not advanced past the failed batch's commit
    version_after = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").agg({"version": "max"}).first()[0]
    assert version_after == version_before
    assert spark.read.format("delta").load(str(table)).count() == 2
    assert sorted(p.name for p in commits.glob("[0-9]*")) == commits_before
    mv_rows = spark.read.format("delta").load(str(spec.tables_dir / "snapshot_mv")).count()
    assert mv_rows == 2  # the materialized view kept its previous version
    # no metrics for the failed flow in the event log
    failed = spark.read.format("delta").load(str(spec.events_dir)).where(
        f"origin.update_id = '{result.update_id}' AND origin.flow_name = 'checked' AND event_type = 'flow_progress'")
    statuses = [r.details for r in failed.collect()]
    assert any('"FAILED"' in d for d in statuses) and not any("data_quality" in d for d in statuses)


def test_second_update_on_same_storage_fails_fast(tmp_path: Path) -> None:
    with update_lock(tmp_path, "first"):
        started = time.perf_counter()
        with pytest.raises(ConcurrentUpdateError) as info, update_lock(tmp_path, "second"):
            pass
        assert time.perf_counter() - started < 1
        assert info.value.code == "UPDATE_ALREADY_RUNNING" and "update first" in str(info.value)


SLOW = """
import time
import dlt
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

@F.udf(LongType())
def slow(x):
    time.sleep(0.5)
    return x

@dlt.table
def events():
    return (spark.readStream.format("json").schema("id bigint").option("maxFilesPerTrigger", 1)
            .load(spark.conf.get("landing")).withColumn("id", slow("id")))

@dlt.table
def event_count():
    return dlt.read("events").groupBy().count()
"""


def test_killed_update_is_finished_exactly_once_by_the_next(spark, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    for i in range(6):
        write_json_lines(landing, f"f{i}.json", [f'{{"id":{i * 10 + j}}}' for j in range(3)])
    spec = make_pipeline(tmp_path, {"p.py": SLOW}, {"landing": str(landing)}, name="killme")
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(
        f"name: killme\nlibraries: [{{glob: {{include: pipeline/**}}}}]\nstorage: storage\nschema: {spec.schema}\n"
        f"configuration: {{landing: '{landing}'}}\n")
    log = spec.tables_dir / "events" / "_delta_log"
    proc = subprocess.Popen([sys.executable, "-m", "framework.cli", "run", str(spec_file), "--no-report"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and not (log / "00000000000000000001.json").exists():
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (log / "00000000000000000001.json").exists(), "the update never committed a batch"
    partial = spark.read.format("delta").load(str(spec.tables_dir / "events")).count()
    assert 0 < partial < 18

    result = run_update(spec, UpdateOptions(), spark=spark)
    assert result.succeeded
    rows = spark.read.format("delta").load(str(spec.tables_dir / "events")).select("id").collect()
    assert sorted(r.id for r in rows) == sorted(i * 10 + j for i in range(6) for j in range(3))
    assert spark.read.table(f"{spec.schema}.event_count").first()[0] == 18

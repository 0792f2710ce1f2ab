"""Failed and killed updates through the command line (issue 19), in fresh processes as a user runs them: a failed
update exits 1 with the summary, the report and the cause, never a traceback; a killed update leaves the events
it had written. Each test starts a JVM (about 20 s), so there are few."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.spark


def medallion(*args: str, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run([sys.executable, "-m", "framework.cli", *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def write_project(root: Path, source: str, configuration: dict[str, str] | None = None,
                  spark_conf: dict[str, str] | None = None) -> Path:
    """A pipeline folder and its spec (storage under ``root``); returns the spec's path."""
    (root / "pipeline").mkdir(parents=True)
    (root / "pipeline" / "p.py").write_text(textwrap.dedent(source))
    spec = root / "spec.yaml"
    spec.write_text(json.dumps({"name": "failures", "libraries": [{"glob": {"include": "pipeline/**"}}],
                                "storage": str(root / "storage"), "configuration": configuration or {},
                                "spark_conf": spark_conf or {}}))
    return spec


def committed_events(storage: Path) -> list[dict[str, Any]]:
    """The events in the event log's committed files (read from its Delta log, without Spark)."""
    log = storage / "system" / "events" / "_delta_log"
    files = []
    for commit in sorted(log.glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                files.append(log.parent / action["add"]["path"])
    events = [row for path in files for row in pq.read_table(path).to_pylist()]
    return sorted(events, key=lambda e: e["sequence"]["control_plane_seq_no"])


def status(event: dict[str, Any]) -> str | None:
    return json.loads(event["details"]).get(event["event_type"], {}).get("status")


def line_of(source: str, marker: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if marker in line)


FAILING = """
import dlt
from pyspark.sql import functions as F


@F.udf("bigint")
def explode_on(n):
    raise ValueError("boom 42")  # udf raise


@dlt.table
def udf_mv():
    return spark.range(3).select(explode_on("id").alias("n"))


@dlt.table
@dlt.expect_or_fail("non_null_id", "id IS NOT NULL")
def checked():
    return spark.readStream.format("json").schema("id bigint").load(spark.conf.get("landing"))


@dlt.table
def divided():
    return spark.range(3).select((F.col("id") / F.lit(0)).alias("ratio"))


@dlt.table
def fine():
    return spark.range(2)
"""


def test_a_failed_first_update_exits_1_with_its_summary_report_and_cause(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "a.json").write_text('{"id":1}\n{"id":null}\n')
    spec = write_project(tmp_path, FAILING, {"landing": str(landing)}, {"spark.sql.ansi.enabled": "true"})
    result = medallion("run", str(spec))
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output and "An error occurred while calling" not in output
    assert "QueryContextLogger" not in output and "\tat org.apache" not in output  # no JVM stack trace either
    assert any("divided" in line and "DIVIDE_BY_ZERO" in line for line in output.splitlines()), output
    assert "': FAILED in " in result.stdout  # the summary
    where = f"{tmp_path / 'pipeline' / 'p.py'}:{line_of(FAILING, '# udf raise')}"
    udf_lines = [line for line in output.splitlines() if "ValueError: boom 42" in line]
    assert any("udf_mv" in line and where in line for line in udf_lines), output  # the console line
    assert any(line.strip().startswith("error: ValueError: boom 42") and where in line
               for line in udf_lines), output  # the summary's
    assert any("checked" in line and "FAILED" in line for line in result.stdout.splitlines()), output
    report = next(line.split(None, 1)[1] for line in result.stdout.splitlines() if line.startswith("report:"))
    assert Path(report).is_file()

    storage = tmp_path / "storage"
    for flow in ("udf_mv", "checked", "divided"):
        assert not (storage / "tables" / flow / "_delta_log").exists(), flow
    assert (storage / "tables" / "fine" / "_delta_log").is_dir()
    events = committed_events(storage)
    last = [e for e in events if e["event_type"] == "update_progress"][-1]
    assert json.loads(last["details"])["update_progress"]["state"] == "FAILED"
    (failed,) = [e for e in events if e["origin"]["flow_name"] == "udf_mv" and status(e) == "FAILED"]
    assert failed["error"]["exceptions"][-1]["class_name"] == "ValueError"
    assert failed["error"]["exceptions"][-1]["message"] == "boom 42"


KILLED = """
import time

import dlt

calls = {"slow": 0}


@dlt.table
def first():
    return spark.range(5)


@dlt.table
def slow():
    calls["slow"] += 1
    if calls["slow"] > 1:  # resolved at once; stuck when it runs, after `first` committed
        time.sleep(600)
    return dlt.read("first")
"""


def test_a_killed_update_keeps_the_events_it_wrote(tmp_path: Path) -> None:
    spec = write_project(tmp_path, KILLED)
    storage = tmp_path / "storage"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "framework.cli", "run", str(spec), "--no-report"],
                            cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    events: list[dict[str, Any]] = []
    deadline = time.time() + 300
    try:
        while time.time() < deadline and proc.poll() is None:
            if (storage / "system" / "events" / "_delta_log").is_dir():
                events = committed_events(storage)
                if any(e["origin"]["flow_name"] == "first" and status(e) == "COMPLETED" for e in events):
                    break
            time.sleep(0.5)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the update ended before it was killed"

    events = committed_events(storage)
    kinds = [(e["event_type"], e["origin"]["flow_name"], status(e)) for e in events]
    assert ("create_update", None, None) in kinds
    assert {("flow_definition", "first", None), ("flow_definition", "slow", None)} <= set(kinds)
    assert ("flow_progress", "first", "COMPLETED") in kinds, kinds
    (completed,) = [e for e in events if e["origin"]["flow_name"] == "first" and status(e) == "COMPLETED"]
    assert json.loads(completed["details"])["flow_progress"]["metrics"]["num_output_rows"] == 5
    assert not any(e["event_type"] == "update_progress" and "COMPLETED" in e["details"] for e in events)
    seqs = [e["sequence"]["control_plane_seq_no"] for e in events]
    assert seqs == sorted(set(seqs))

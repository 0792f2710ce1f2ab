"""What the command line says to a new user (issue 39), through the CLI in fresh processes: a continuous run
stopped by Ctrl-C ends CANCELED in its summary as in its event log, exit 130."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO_ROOT
from tests.e2e.test_cli_failures import committed_events, write_project

pytestmark = pytest.mark.spark

STREAM = """
import dlt


@dlt.table
def raw():
    return spark.readStream.format("json").schema("id BIGINT").load(spark.conf.get("landing"))
"""


def test_ctrl_c_stops_a_continuous_run_gracefully_as_canceled(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "a.json").write_text('{"id": 1}\n{"id": 2}\n')
    spec = write_project(
        tmp_path, STREAM, {"landing": str(landing), "pipelines.trigger.interval": "1 second"}
    )
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), MEDALLION_NO_SERVER="1")
    with out.open("w") as stdout, err.open("w") as stderr:
        # a session of its own: the signal goes to the whole process group, as a terminal's Ctrl-C does
        proc = subprocess.Popen(
            [sys.executable, "-m", "framework.cli", "run", str(spec), "--continuous", "--no-report"],
            cwd=REPO_ROOT,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        try:
            deadline = time.time() + 300
            while "keep running until the update is stopped" not in err.read_text():
                assert proc.poll() is None and time.time() < deadline, err.read_text()
                time.sleep(0.5)
            (landing / "b.json").write_text('{"id": 3}\n')  # picked up while it runs
            checkpoint = tmp_path / "storage" / "checkpoints" / "raw" / "raw" / "commits"
            while not (checkpoint / "1").exists():
                assert proc.poll() is None and time.time() < deadline, err.read_text()
                time.sleep(0.5)
            os.killpg(proc.pid, signal.SIGINT)
            code = proc.wait(timeout=180)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    stdout_text, stderr_text = out.read_text(), err.read_text()
    assert code == 130, stdout_text + stderr_text
    assert (
        "stopping the continuous update" in stderr_text
    )  # graceful: PySpark's own SIGINT handler is not used
    assert "': CANCELED in " in stdout_text and "FAILED" not in stdout_text, stdout_text
    assert "Traceback" not in stderr_text
    events = committed_events(tmp_path / "storage")
    last = [e for e in events if e["event_type"] == "update_progress"][-1]
    assert json.loads(last["details"])["update_progress"]["state"] == "CANCELED"
    # the rows the run committed (an append-only table: every data file is live), each file once
    table = tmp_path / "storage" / "tables" / "raw"
    ids = sorted(i for f in table.glob("*.parquet") for i in pq.read_table(f).column("id").to_pylist())
    assert ids == [1, 2, 3]

"""Two ``medallion run`` on the same storage: the second is refused at once, before its JVM starts, and the first
is not disturbed (issue 19, "Fail fast, before Spark starts")."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.reliability.helpers import TRACEBACK, medallion, medallion_popen, write_spec

pytestmark = pytest.mark.spark

PIPELINE = """
import dlt

@dlt.table
def numbers():
    return spark.readStream.format("json").schema("id BIGINT").load(spark.conf.get("landing"))
"""

# A JVM start alone takes longer than this on the machines the suite runs on (10-20 s cold); an interpreter start
# with the framework's command line imported takes about half a second.
REFUSED_WITHIN_S = 2.0


def test_a_second_update_on_the_same_storage_is_refused_before_its_jvm_starts(tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    (landing / "a.json").write_text("".join(f'{{"id": {i}}}\n' for i in range(5)))
    spec = write_spec(tmp_path, {"p.py": PIPELINE}, name="concurrent", configuration={"landing": str(landing)})
    lock = tmp_path / "storage" / "system" / "update.lock"
    first = medallion_popen("run", str(spec), "--no-report", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while f"pid {first.pid}" not in (lock.read_text() if lock.exists() else ""):
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the first update never took the lock"
            time.sleep(0.05)
        started = time.monotonic()
        second = medallion("run", str(spec), "--no-report", timeout=60)
        elapsed = time.monotonic() - started
        assert first.poll() is None, "the first update ended before the second was refused: nothing was tested"
        out, err = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert second.returncode == 1, second.stderr
    assert "UPDATE_ALREADY_RUNNING" in second.stderr and f"pid {first.pid}" in second.stderr
    assert TRACEBACK not in second.stderr
    assert elapsed < REFUSED_WITHIN_S, f"refused after {elapsed:.1f}s"
    assert first.returncode == 0, err[-3000:]
    assert "COMPLETED" in out

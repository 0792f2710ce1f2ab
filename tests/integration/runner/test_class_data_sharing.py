"""The class-data sharing archive that `make setup` writes (framework/runner/cds.py) is mapped by the sessions
this checkout starts: the shared test session here, and a cold `medallion run` (tests/e2e/test_cold_start.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from framework.cds_training import current_archive
from framework.runner.session import check_java
from framework.settings import load_local_settings

pytestmark = pytest.mark.spark

# The JDK's own default archive holds about 1,300 classes; with the training run's archive a session maps over
# 10,000 (Spark, Delta, Hadoop, Netty, Scala).
JDK_ONLY = 2_000


def shared_classes(spark: Any) -> int:
    """How many classes the session's JVM loaded from class-data sharing archives (its perf counters)."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    jcmd = Path(os.path.realpath(check_java())).parent / "jcmd"
    out = subprocess.run([str(jcmd), str(pid), "PerfCounter.print"], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    counters = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    return int(counters["java.cls.sharedLoadedClasses"])


def test_setup_wrote_the_archive_and_the_shared_session_maps_it(spark: Any) -> None:
    archive = current_archive(load_local_settings())
    assert archive.exists(), f"`make setup` writes {archive} (python -m framework.cds_training build)"
    arguments = list(spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                     .getInputArguments())
    assert f"-XX:SharedArchiveFile={archive}" in arguments
    assert "-XX:TieredStopAtLevel=1" not in arguments  # a long-lived session keeps the C2 compiler
    assert shared_classes(spark) > JDK_ONLY

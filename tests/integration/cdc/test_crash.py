"""A real crash: a separate process is killed (SIGKILL) after the target MERGE committed and before the state
write; the batch is then replayed here, as the stream would after a restart from its checkpoint."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from framework.cdc import ApplyChangesTarget
from framework.declarations import ApplyChanges
from tests.conftest import REPO_ROOT
from tests.integration.cdc.helpers import rows

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCHEMA = "id INT, v STRING, seq INT, op STRING"
SPEC = ApplyChanges(source="s", keys=("id",), sequence_by="seq", apply_as_deletes="op = 'D'",
                    except_column_list=("op",))
CHILD = """
import os, signal
from framework.runner.session import get_or_create_session
from framework.cdc import ApplyChangesTarget
from framework.cdc.scd1 import Scd1Applier
from framework.declarations import ApplyChanges

spark = get_or_create_session()
spec = ApplyChanges(source="s", keys=("id",), sequence_by="seq", apply_as_deletes="op = 'D'",
                    except_column_list=("op",))
target = ApplyChangesTarget(spark, spec, "target", {table!r}, {state!r})
schema = "id INT, v STRING, seq INT, op STRING"
target.apply_batch(spark.createDataFrame([(1, "a", 1, "U"), (2, "b", 1, "U")], schema), 0, "app")
Scd1Applier._write_state = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
target.apply_batch(spark.createDataFrame([(1, None, 5, "D"), (2, "c", 2, "U")], schema), 1, "app")
"""


def test_killed_between_target_merge_and_state_write(spark: SparkSession, storage: Path) -> None:
    table, state = str(storage / "tables" / "target"), str(storage / "state" / "target")
    child = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD.format(table=table, state=state))],
                           cwd=REPO_ROOT, timeout=900, capture_output=True, text=True)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    target = ApplyChangesTarget(spark, SPEC, "target", table, state)
    assert rows(spark, target) == [(2, "c", 2)]  # the MERGE committed before the kill
    replay = target.apply_batch(spark.createDataFrame([(1, None, 5, "D"), (2, "c", 2, "U")], SCHEMA), 1, "app")
    assert replay.skipped and rows(spark, target) == [(2, "c", 2)]
    # the replay wrote the tombstone the crash lost: a late upsert below the delete does not revive key 1
    target.apply_batch(spark.createDataFrame([(1, "late", 3, "U")], SCHEMA), 2, "app")
    assert rows(spark, target) == [(2, "c", 2)]

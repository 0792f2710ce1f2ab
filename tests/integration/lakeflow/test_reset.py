"""Issue 36's refresh settings, through the test kit (two pipelines' updates): the reset-checkpoints refresh
keeps the tables' data and clears the named streaming flows' checkpoints (so they read their sources again);
``pipelines.reset.allowed = false`` keeps a table's data and checkpoint through a full refresh."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.errors import UpdateError
from framework.testing import run_pipeline

pytestmark = pytest.mark.spark

PIPELINE = '''
from pyspark import pipelines as dp

def events():
    return spark.readStream.format("json").schema("id bigint").load(spark.conf.get("landing"))

@dp.table(table_properties={"pipelines.reset.allowed": "false"})
def kept():
    return events()

@dp.table
def reset():
    return events()
'''


def _ids(run, table: str) -> list[int]:  # type: ignore[no-untyped-def]
    return sorted(r.id for r in run.table(table).collect())


def test_reset_checkpoints_and_reset_allowed(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "p.py").write_text(PIPELINE)
    first = run_pipeline(spark, folder, tmp_path=tmp_path, schema="lf_reset", configuration={"landing": "{inputs}"},
                         inputs={"a.json": [{"id": 1}, {"id": 2}]})
    assert first.succeeded, first.error
    # the reset flow reads its source again: its rows twice; the other flow goes on from its checkpoint
    again = first.run_again(inputs={"b.json": [{"id": 3}]}, reset_checkpoints=["reset"])
    assert again.succeeded, again.error
    assert _ids(again, "reset") == [1, 1, 2, 2, 3] and _ids(again, "kept") == [1, 2, 3]
    # a full refresh: `kept` keeps its rows and checkpoint (nothing read twice), `reset` starts again
    full = again.run_again(inputs={"c.json": [{"id": 4}]}, full_refresh=True)
    assert full.succeeded, full.error
    assert _ids(full, "kept") == [1, 2, 3, 4] and _ids(full, "reset") == [1, 2, 3, 4]
    bad = full.run_again(reset_checkpoints=["nope"])
    assert isinstance(bad.error, UpdateError) and bad.error.code == "UNKNOWN_SELECTION"

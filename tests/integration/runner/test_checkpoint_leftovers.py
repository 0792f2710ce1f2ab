"""A kill -9 during a new stateful stream's first offsets write leaves ``offsets/.0.<uuid>.tmp``; Spark then
refuses every later start (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY). The next update must run."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from framework.runner.update import UpdateOptions, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

pytestmark = pytest.mark.spark

DEDUP = """
import dlt

@dlt.table
def ids():
    return (spark.readStream.format("json").schema("id BIGINT").load(spark.conf.get("landing"))
            .dropDuplicates(["id"]))
"""


def test_an_update_after_a_kill_in_the_first_offsets_write_runs(spark, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id": 1}', '{"id": 1}', '{"id": 2}'])
    spec = make_pipeline(tmp_path, {"p.py": DEDUP}, {"landing": str(landing)})
    offsets = spec.checkpoints_dir / "ids" / "ids" / "offsets"
    offsets.mkdir(parents=True)  # what the kill left: the temporary file of offsets/0 and its checksum
    (offsets / ".0.216a328c-c7b2-4345-8d1b-b34eaf02f395.tmp").write_text("")
    (offsets / "..0.216a328c-c7b2-4345-8d1b-b34eaf02f395.tmp.crc").write_text("")
    result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert result.succeeded, [f.error for f in result.flows if f.error]
    assert sorted(r.id for r in spark.read.format("delta").load(str(spec.tables_dir / "ids")).collect()) == [1, 2]

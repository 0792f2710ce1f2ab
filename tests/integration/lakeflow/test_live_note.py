"""The summary's note on the deprecated ``LIVE`` virtual schema appears for ``LIVE.x`` names only: ``dlt.read("x")``
and ``dlt.read_stream("x")`` are current Python API on Databricks, not the LIVE schema."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.runner.update import UpdateOptions, run_update
from framework.spec import parse_spec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

NOTE = "LIVE.<name> is the legacy publishing mode's virtual schema"
PYTHON = '''
import dlt

@dlt.table
def a():
    return spark.range(3)

@dlt.table
def b():
    return dlt.read("a").where("id > 0")
'''
SQL = "CREATE OR REFRESH MATERIALIZED VIEW a AS SELECT 1 AS x;\nCREATE OR REFRESH MATERIALIZED VIEW b AS SELECT * FROM LIVE.a;\n"


@pytest.mark.parametrize(("file", "text", "noted"), [("p.py", PYTHON, False), ("p.sql", SQL, True)])
def test_the_live_note_names_live_reads_only(spark: SparkSession, tmp_path: Path, file: str, text: str,
                                             noted: bool) -> None:
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / file).write_text(text)
    raw = {"name": "live_note", "libraries": [{"glob": {"include": "pipeline/**"}}], "storage": "storage",
           "catalog": "main", "schema": f"live_note_{Path(file).suffix[1:]}"}
    spec = parse_spec(raw, source=str(tmp_path / "spec.yaml"), default_root=tmp_path)
    out = io.StringIO()
    result = run_update(spec, UpdateOptions(out=out, write_report=False), spark=spark)
    assert result.succeeded, result.error
    assert (NOTE in out.getvalue()) is noted, out.getvalue()

"""Issue 36: the event log tells two tables ``t`` in two schemas apart (the default publishing mode): each
flow's events name the dataset as declared, qualified when it is published outside the pipeline's schema."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.runner.update import UpdateOptions, run_update
from framework.spec import parse_spec

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PYTHON = """
from pyspark import pipelines as dp

@dp.materialized_view(name="t")
def t_sales():
    return spark.range(2)

@dp.materialized_view(name="reporting.t")
def t_reporting():
    return spark.range(3)
"""


def test_two_tables_t_in_two_schemas(spark: SparkSession, tmp_path: Path) -> None:
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "p.py").write_text(PYTHON)
    raw = {"name": "two_t", "libraries": [{"glob": {"include": "pipeline/**"}}], "storage": "storage",
           "catalog": "main", "schema": "ev_sales"}
    spec = parse_spec(raw, source=str(tmp_path / "spec.yaml"), default_root=tmp_path)
    result = run_update(spec, UpdateOptions(), spark=spark)
    assert result.succeeded, result.error or [f.error for f in result.flows]
    assert spark.read.table("main.ev_sales.t").count() == 2 and spark.read.table("main.reporting.t").count() == 3
    events = spark.read.format("delta").load(str(spec.events_dir)).where("event_type = 'flow_progress'")
    completed = {(r.origin.dataset_name, r.origin.flow_name) for r in events.collect()
                 if r.message.endswith("COMPLETED.")}
    assert completed == {("t", "t"), ("reporting.t", "reporting.t")}

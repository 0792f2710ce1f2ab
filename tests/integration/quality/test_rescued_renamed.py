"""Rescued rows are counted under the rescued data column's own name (issue 39): Auto Loader's
``rescuedDataColumn`` option renames ``_rescued_data``, and the flow's ``num_rescued_rows``, the summary and the
report count that column (batch and streaming reads)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.quality.report import collect_report
from framework.runner.update import UpdateOptions, run_update
from tests.integration.runner.pipeline_factory import make_pipeline, write_json_lines

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

PIPELINE = """
import dlt


@dlt.table
def landed():
    return (spark.readStream.format("cloudFiles").option("cloudFiles.format", "json")
            .option("cloudFiles.schemaHints", "id bigint, amount double")
            .option("rescuedDataColumn", "_bad_values")
            .option("cloudFiles.schemaLocation", spark.conf.get("schemas"))
            .load(spark.conf.get("landing")))
"""


def test_a_renamed_rescued_data_column_is_counted(spark: SparkSession, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    write_json_lines(landing, "a.json", ['{"id": 1, "amount": 5}', '{"id": 2, "amount": "n/a"}',
                                         '{"id": 3, "amount": "twelve"}'])
    spec = make_pipeline(tmp_path, {"p.py": PIPELINE},
                         {"landing": str(landing), "schemas": str(tmp_path / "schemas")})
    result = run_update(spec, UpdateOptions(out=io.StringIO()), spark=spark)
    assert result.succeeded, result.error
    table = spark.read.format("delta").load(str(spec.tables_dir / "landed"))
    assert "_rescued_data" not in table.columns
    assert table.where("_bad_values IS NOT NULL").count() == 2
    assert result.flow("landed").num_rescued_rows == 2
    update = collect_report(spark, spec.storage, with_rule_files=False).update
    assert {d.dataset: d.rescued for d in update.datasets}["landed"] == 2
    assert update.rescued == 2

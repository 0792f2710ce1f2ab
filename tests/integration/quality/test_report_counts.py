"""The report and the summary tell the same story as the tables (issue 39): rescued rows are counted per dataset
where Auto Loader rescued them, and an ``expect_or_fail`` rule that failed an update shows in the report with the
record the event log names."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from framework.quality.report import build_report, collect_report
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
            .option("cloudFiles.schemaLocation", spark.conf.get("schemas"))
            .load(spark.conf.get("landing")))


@dlt.table
@dlt.expect("has_amount", "amount IS NOT NULL")
def kept():  # keeps _rescued_data: its rows were rescued upstream, not here
    return dlt.read_stream("landed")


@dlt.table
@dlt.expect_or_fail("small_id", "id < 2")
def checked():
    return spark.range(4)
"""


def test_rescued_rows_and_a_failed_rule_reach_the_summary_and_the_report(
    spark: SparkSession, tmp_path: Path
) -> None:
    landing = tmp_path / "landing"
    write_json_lines(
        landing,
        "a.json",
        [
            '{"id": 1, "amount": 5}',
            '{"id": 2, "amount": "n/a"}',
            '{"id": 3, "amount": 7}',
            '{"id": 4, "amount": "twelve"}',
        ],
    )
    spec = make_pipeline(
        tmp_path, {"p.py": PIPELINE}, {"landing": str(landing), "schemas": str(tmp_path / "schemas")}
    )
    out = io.StringIO()
    result = run_update(spec, UpdateOptions(out=out), spark=spark)
    assert not result.succeeded and result.flow("checked").status == "FAILED"

    bronze = spark.read.format("delta").load(str(spec.tables_dir / "landed"))
    in_table = bronze.where("_rescued_data IS NOT NULL").count()
    assert in_table == 2  # the two amounts that are not numbers
    assert result.flow("landed").num_rescued_rows == in_table
    assert result.flow("kept").num_rescued_rows is None  # counted once, where rescued
    raw_line = next(line for line in out.getvalue().splitlines() if line.startswith("landed "))
    assert raw_line.split()[3:6] == ["COMPLETED", "4", "2"]  # status, rows, rescued (no drops)

    update = collect_report(spark, spec.storage, with_rule_files=False).update
    assert update is not None and update.update_id == result.update_id
    per_dataset = {d.dataset: d for d in update.datasets}
    assert per_dataset["landed"].rescued == in_table
    assert per_dataset["kept"].rescued is None
    assert update.rescued == in_table

    # Databricks records no metrics for the failed flow; its error names the rule and the record
    (rule,) = per_dataset["checked"].rules
    assert (rule.name, rule.dataset, rule.action, rule.failed) == ("small_id", "checked", "fail", 0)
    assert rule.violation is not None and json.loads(rule.violation) == {"id": 2}
    assert per_dataset["checked"].failing_rules == [rule]

    paths = build_report(spark, spec.storage, out_dir=tmp_path / "report", with_rule_files=False)
    html = paths.html.read_text()
    assert "No expectations ran" not in html
    assert "small_id" in html and "failed the update" in html
    data = json.loads(paths.json.read_text())
    assert data["update"]["totals"]["rescued"] == in_table
    checked = next(d for d in data["update"]["datasets"] if d["dataset"] == "checked")
    assert checked["rules"][0]["violation"] == rule.violation

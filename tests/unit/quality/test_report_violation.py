"""An update failed by an ``expect_or_fail`` rule, and an interrupted one, as the report and the summary show them
(issue 39), from plain event dicts and results (no Spark)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

from framework.errors import UpdateError
from framework.quality.report_html import render_html
from framework.quality.report_model import Report, summarize
from framework.runner.results import FlowResult, UpdateResult
from framework.runner.summary import format_summary
from framework.spec import parse_spec

T0 = datetime(2026, 1, 1, 8)


def event(kind: str, minute: int, details: dict, dataset: str | None = None) -> dict:
    return {
        "event_type": kind,
        "update_id": "u1",
        "timestamp": T0 + timedelta(minutes=minute),
        "dataset_name": dataset,
        "flow_name": dataset,
        "pipeline_name": "p",
        "details": json.dumps({kind: details}),
    }


FAILED_BY_RULE = [
    event("create_update", 0, {"cause": "USER_ACTION"}),
    event("flow_progress", 1, {"status": "RUNNING"}, "orders"),
    # the shape progress.py writes: no metrics for the failed batch, the violation as data
    event(
        "flow_progress",
        2,
        {
            "status": "FAILED",
            "expectation_violation": {
                "dataset": "orders",
                "expectations": ["known_id"],
                "record": '{"id":null,"amount":5.0}',
            },
        },
        "orders",
    ),
    event("update_progress", 3, {"state": "FAILED"}),
]


def test_a_rule_that_failed_the_update_is_in_the_report() -> None:
    (update,) = summarize(FAILED_BY_RULE, {"orders/known_id": {"constraint": "id IS NOT NULL"}})
    (dataset,) = update.datasets
    (rule,) = dataset.rules
    assert (rule.name, rule.dataset, rule.action, rule.constraint) == (
        "known_id",
        "orders",
        "fail",
        "id IS NOT NULL",
    )
    assert (rule.passed, rule.failed, rule.violation) == (0, 0, '{"id":null,"amount":5.0}')
    assert dataset.failing_rules == [rule]
    html = render_html(Report(T0, "/s", update, [update]))
    assert "No expectations ran" not in html
    assert "known_id" in html and "failed the update" in html and "&quot;id&quot;:null" in html
    assert "≥ 1" in html  # at least the one violating row, which has no count of its own


def test_the_summary_of_an_interrupted_update_says_canceled(tmp_path: Path) -> None:
    spec = parse_spec(
        {"name": "p", "libraries": [{"glob": {"include": "x/**"}}]},
        source=str(tmp_path / "s.yaml"),
        default_root=tmp_path,
    )
    flow = FlowResult(
        "raw", "raw", "streaming_table", status="COMPLETED", num_output_rows=3, num_rescued_rows=2
    )
    canceled = UpdateResult(
        "abcdef12-0",
        False,
        [flow],
        1.0,
        tmp_path,
        tmp_path,
        error=UpdateError("the update was interrupted (Ctrl-C)", code="UPDATE_CANCELED"),
    )
    text = format_summary(spec, canceled)
    assert "': CANCELED in " in text and "FAILED" not in text and "UPDATE_CANCELED" not in text
    (raw,) = [line for line in text.splitlines() if line.startswith("raw ")]
    assert raw.split()[3:6] == ["COMPLETED", "3", "2"]  # status, rows, rescued
    failed = UpdateResult(
        "abcdef12-0", False, [flow], 1.0, tmp_path, tmp_path, error=UpdateError("boom", code="UPDATE_FAILED")
    )
    assert "': FAILED in " in format_summary(spec, failed)

"""Report aggregation and HTML rendering from plain event dicts (no Spark)."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

from framework.quality.report_html import esc, render_html
from framework.quality.report_model import QuarantineSample, Report, summarize

T0 = datetime(2024, 5, 1, 8)


def event(kind: str, update: str, minute: int, details: dict, dataset: str | None = None) -> dict:
    return {"event_type": kind, "update_id": update, "timestamp": T0 + timedelta(minutes=minute),
            "dataset_name": dataset, "flow_name": dataset, "pipeline_name": "sample",
            "details": json.dumps({kind: details})}


def progress(update: str, minute: int, dataset: str, out: int, dropped: int, rules: list[tuple[str, int, int]],
             **metrics: int) -> dict:
    return event("flow_progress", update, minute, {
        "status": "COMPLETED", "metrics": {"num_output_rows": out, **metrics},
        "data_quality": {"dropped_records": dropped, "expectations": [
            {"name": n, "dataset": dataset, "passed_records": p, "failed_records": f} for n, p, f in rules]}},
        dataset)


EVENTS = [
    event("create_update", "u1", 0, {"cause": "USER_ACTION", "full_refresh": True, "config": {}}),
    event("flow_progress", "u1", 1, {"status": "RUNNING"}, "orders_clean"),
    # a streaming flow reports per micro-batch: metrics add up
    progress("u1", 2, "orders_clean", 90, 10, [("amount_positive", 92, 8), ("known_status", 99, 1)]),
    progress("u1", 3, "orders_clean", 45, 5, [("amount_positive", 47, 3), ("known_status", 50, 0)]),
    progress("u1", 3, "orders_clean_quarantine", 15, 0, []),
    progress("u1", 4, "orders_raw", 150, 0, [], num_rescued_records=4),
    event("update_progress", "u1", 5, {"state": "COMPLETED"}),
    event("create_update", "u2", 10, {"cause": "USER_ACTION", "full_refresh": False, "config": {}}),
    event("flow_progress", "u2", 11, {"status": "FAILED"}, "orders_clean"),
    event("update_progress", "u2", 12, {"state": "FAILED"}),
]


def test_summarize_sums_batches_and_folds_quarantine() -> None:
    u1, u2 = summarize(EVENTS, {"orders_clean/amount_positive": {"action": "drop", "severity": "high"}})
    assert (u1.update_id, u1.state, u1.full_refresh) == ("u1", "COMPLETED", True)
    assert [d.dataset for d in u1.datasets] == ["orders_clean", "orders_raw"]
    orders = u1.datasets[0]
    assert (orders.rows_out, orders.dropped, orders.rows_in, orders.quarantined) == (135, 15, 150, 15)
    amount = next(r for r in orders.rules if r.name == "amount_positive")
    assert (amount.passed, amount.failed, amount.action) == (139, 11, "drop")
    assert round(amount.failure_rate, 4) == round(11 / 150, 4)
    assert u1.datasets[1].rescued == 4
    assert u1.pass_rate == 1 - 12 / 300
    assert (u2.state, u2.datasets[0].status, u2.pass_rate) == ("FAILED", "FAILED", None)


def test_html_escapes_every_data_value() -> None:
    evil = "<script>alert(1)</script>"
    events = [event("create_update", evil, 0, {"full_refresh": False}),
              progress(evil, 1, evil, 3, 1, [(evil, 2, 1)]),
              event("update_progress", evil, 2, {"state": evil})]
    [update] = summarize(events)
    update.pipeline_name = evil
    sample = QuarantineSample(evil, evil, [evil], [[evil], [None]], 2, [[evil], []])
    page = render_html(Report(T0, evil, update, [update], [sample]))
    assert "<script" not in page.lower()
    assert page.count(esc(evil)) >= 8
    assert 'http-equiv="Content-Security-Policy"' in page
    assert not re.search(r"(src|href)=\"https?:", page)  # self-contained


def test_empty_event_log_renders() -> None:
    page = render_html(Report(T0, "/tmp/x", None, [], []))
    assert "no updates yet" in page


# ------------------------------------------------------------------------------------- issue 19: report fidelity
def test_apply_changes_flow_shows_upserted_rows_as_rows_out() -> None:
    """APPLY CHANGES reports num_upserted_rows (no num_output_rows): the console shows 22 (-2), so does the report."""
    events = [event("create_update", "u1", 0, {}),
              event("flow_progress", "u1", 1, {"status": "COMPLETED",
                                               "metrics": {"num_upserted_rows": 22, "num_deleted_rows": 2}},
                    "dim_customers"),
              progress("u1", 2, "orders", 5, 0, [], num_upserted_rows=3)]
    (update,) = summarize(events)
    dim, orders = update.datasets
    assert (dim.rows_out, dim.upserted, dim.deleted) == (22, 22, 2)
    assert orders.rows_out == 3  # upserted rows win, as in the console's summary
    assert update.rows_out == 25


def test_a_retry_that_succeeded_is_one_line_from_the_retrying_message() -> None:
    stream_failure = "org.apache.spark.sql.streaming.StreamingQueryException: ...\n" + "\tat Plan(...)\n" * 200
    retrying = event("flow_progress", "u1", 1, {"status": "RETRYING"}, "orders_raw")
    retrying |= {"message": "Flow 'orders_raw' is RETRYING: schema widened: new column `coupon`; retried.\n"
                            "second line", "error_message": stream_failure}
    events = [event("create_update", "u1", 0, {}), retrying, progress("u1", 2, "orders_raw", 7, 0, [])]
    (update,) = summarize(events)
    (orders,) = update.datasets
    assert orders.status == "COMPLETED" and orders.error is None
    assert orders.note == "Flow 'orders_raw' is RETRYING: schema widened: new column `coupon`; retried."
    page = render_html(Report(T0, "/s", update, [update]))
    assert "schema widened: new column `coupon`; retried." in page and "StreamingQueryException" not in page
    assert "second line" not in page


def test_a_failure_shows_its_first_lines_not_a_stack_trace() -> None:
    failed = event("flow_progress", "u1", 1, {"status": "FAILED"}, "orders") | {
        "error_message": "ValueError: bad amount\nin orders.py:12\nthird\n" + "\tat java.lang.Thread\n" * 500}
    (update,) = summarize([event("create_update", "u1", 0, {}), failed])
    error = update.datasets[0].error
    assert error is not None and error.startswith("ValueError: bad amount\nin orders.py:12\nthird")
    assert "500 more lines in the event log" in error and len(error) < 400


def test_action_column_shows_fail_warn_and_drop_from_declared_expectations() -> None:
    from framework.declarations import Expectation
    from framework.quality.report_model import expectation_info

    declared = {"orders_clean": [Expectation("amount_positive", "amount > 0", "drop"),
                                 Expectation("has_id", "id IS NOT NULL", "fail"),
                                 Expectation("known_status", "status IN ('NEW')", "warn")]}
    events = [event("create_update", "u1", 0, {}),
              progress("u1", 1, "orders_clean", 9, 1, [("amount_positive", 9, 1), ("has_id", 10, 0),
                                                       ("known_status", 8, 2)])]
    (update,) = summarize(events, expectation_info(declared))
    actions = {r.name: (r.action, r.constraint) for r in update.datasets[0].rules}
    assert actions == {"amount_positive": ("drop", "amount > 0"), "has_id": ("fail", "id IS NOT NULL"),
                       "known_status": ("warn", "status IN ('NEW')")}
    page = render_html(Report(T0, "/s", update, [update]))
    for action in ("drop", "fail", "warn"):
        assert f'<span class="tag {action}">{action}</span>' in page


def test_trend_draws_a_pass_rate_point_for_every_update() -> None:
    events = []
    for i in range(30):  # more updates than axis labels: labels are thinned out, pass-rate points are not
        events += [event("create_update", f"u{i:02d}", 10 * i, {}),
                   progress(f"u{i:02d}", 10 * i + 1, "t", 10, 0, [("r", 9, 1)])]
    history = summarize(events)
    page = render_html(Report(T0, "/s", history[-1], history))
    assert page.count('class="rate-dot"') == 30
    assert len(re.findall(r'class="axis(?: selected)?" text-anchor="middle">u\d\d', page)) < 30


def test_gx_rule_sets_gather_decorators_and_rule_files_and_name_what_they_leave_out() -> None:
    from pyspark.sql import Column
    from pyspark.sql.column import Column as _ColumnType

    from framework.declarations import Expectation
    from framework.quality.gx import pipeline_rulesets
    from framework.quality.rules import Rule, RuleSet

    column = object.__new__(_ColumnType)  # stands for a Column built in pipeline code (no Spark needed here)
    assert isinstance(column, Column)
    declared = {"orders": [Expectation("positive", "amount > 0", "fail"), Expectation("py_rule", column, "drop")],
                "views_only": [Expectation("w", "x IS NOT NULL", "warn")]}
    files = {"orders": RuleSet("orders", (Rule("positive", "amount > 0", "fail", severity="high",
                                               description="money in"),
                                          Rule("file_only", "id IS NOT NULL", "drop")), source="orders.yaml")}
    rulesets, skipped = pipeline_rulesets(declared, files)
    assert [r.name for r in rulesets["orders"]] == ["positive", "file_only"]
    assert rulesets["orders"]["positive"].severity == "high" and rulesets["orders"]["positive"].action == "fail"
    assert [r.name for r in rulesets["views_only"]] == ["w"]
    assert [(s.dataset, s.rule) for s in skipped] == [("orders", "py_rule")]
    assert "PySpark Column, not SQL text" in skipped[0].reason

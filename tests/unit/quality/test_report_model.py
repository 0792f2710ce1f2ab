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

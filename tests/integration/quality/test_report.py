"""build_report over a real event log (Delta) and a real quarantine table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from framework.errors import PipelineError
from framework.quality.quarantine import append_quarantine, split_quarantine
from framework.quality.report import build_report
from framework.quality.rules import load_rules

from .eventlog_helpers import FlowRun, write_update

pytestmark = pytest.mark.spark

EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def storage_with_runs(spark, tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """Two updates and a quarantine table, written once for the module (Delta writes are the slow part)."""
    from .conftest import ORDERS, ORDERS_DDL

    storage = tmp_path_factory.mktemp("report") / "storage"
    orders_df = spark.createDataFrame(ORDERS, ORDERS_DDL)
    rules = load_rules("orders_clean")
    write_update(spark, storage, "u-001", [
        FlowRun("orders_raw", 8, extra_metrics={"num_rescued_records": 1}),
        FlowRun("orders_clean", 8, [("amount_positive", 8, 0), ("known_status", 8, 0)]),
    ], full_refresh=True)
    _good, bad = split_quarantine(orders_df, rules, update_id="u-002")
    append_quarantine(bad, str(storage / "tables" / "orders_clean_quarantine"))
    write_update(spark, storage, "u-002", [
        FlowRun("orders_raw", 8),
        FlowRun("orders_clean", 3, [("amount_positive", 6, 2), ("known_status", 7, 1),
                                    ("order_id_present", 7, 1)], dropped=5),
        FlowRun("orders_clean_quarantine", 5),
        FlowRun("customers", 0, status="FAILED", error=f"boom {EVIL}"),
    ])
    return storage


def test_report_of_latest_update(spark, storage_with_runs: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    paths = build_report(spark, storage_with_runs, out_dir=tmp_path / "out")
    assert paths.update_id == "u-002"
    data = json.loads(paths.json.read_text())
    update = data["update"]
    assert update["state"] == "FAILED"
    orders = next(d for d in update["datasets"] if d["dataset"] == "orders_clean")
    assert (orders["rows_in"], orders["rows_out"], orders["dropped"], orders["quarantined"]) == (8, 3, 5, 5)
    amount = next(r for r in orders["rules"] if r["name"] == "amount_positive")
    assert (amount["passed"], amount["failed"], amount["action"], amount["failure_rate"]) == (6, 2, "drop", 0.25)
    customers = next(d for d in update["datasets"] if d["dataset"] == "customers")
    assert customers["status"] == "FAILED" and EVIL in customers["error"]
    assert [t["update_id"] for t in data["trend"]] == ["u-001", "u-002"]
    assert data["trend"][0]["rescued"] == 1
    [sample] = data["quarantine_samples"]
    assert sample["dataset"] == "orders_clean" and sample["total"] == 5
    assert sample["columns"][0] == "order_id" and "_update_id" not in sample["columns"]
    assert sorted(map(tuple, sample["failed_rules"]))[0] == ("amount_positive",)
    html = paths.html.read_text()
    assert EVIL not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "amount_positive" in html and "<svg" in html


def test_report_of_an_earlier_update_and_errors(spark, storage_with_runs: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    storage = storage_with_runs
    data = json.loads(build_report(spark, storage, "u-001", tmp_path).json.read_text())
    assert data["update"]["update_id"] == "u-001" and len(data["trend"]) == 1
    assert data["quarantine_samples"] == []  # the quarantine rows belong to u-002
    with pytest.raises(PipelineError) as caught:
        build_report(spark, storage, "nope", tmp_path)
    assert caught.value.code == "UPDATE_NOT_FOUND"
    with pytest.raises(PipelineError) as caught:
        build_report(spark, tmp_path / "empty", out_dir=tmp_path)
    assert caught.value.code == "EVENT_LOG_NOT_FOUND"


@pytest.mark.parametrize("update_id", [None, "u-001", "missing"])
def test_events_read_on_the_driver_are_the_ones_delta_reads(  # type: ignore[no-untyped-def]
        spark, storage_with_runs: Path, monkeypatch: pytest.MonkeyPatch, update_id: str | None) -> None:
    from framework.quality import event_rows
    from framework.quality.report import read_events

    path = str(storage_with_runs / "system" / "events")
    driver = read_events(spark, path, update_id, 20)
    monkeypatch.setattr(event_rows, "driver_events", lambda *args: None)
    through_delta = read_events(spark, path, update_id, 20)

    def key(e: dict) -> tuple:
        return e["timestamp"], e["seq"] or 0, e["event_type"], e["flow_name"] or ""

    assert driver and sorted(driver, key=key) == sorted(through_delta, key=key)
    assert driver == sorted(driver, key=lambda e: (e["timestamp"], e["seq"] or 0))  # oldest first
    assert {e["update_id"] for e in driver} == ({"u-001"} if update_id == "u-001" else {"u-001", "u-002"})

"""The HTML report in a real headless Chromium: injected markup renders as text and never runs.

Skips only when no Chromium is installed (Debian package ``chromium``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from framework.quality.quarantine import append_quarantine, split_quarantine
from framework.quality.report import build_report
from framework.quality.rules import load_rules
from tests.integration.quality.conftest import ORDERS, ORDERS_DDL
from tests.integration.quality.eventlog_helpers import FlowRun, write_update

pytestmark = pytest.mark.spark

PAYLOAD = "<script>document.body.setAttribute('data-pwned','script')</script>"
IMG_PAYLOAD = "<img src=x onerror=\"document.body.setAttribute('data-pwned','img')\">"


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def run_chromium(binary: str, page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
             f"--user-data-dir={profile}"]
    return subprocess.run([binary, *flags, *extra, page.as_uri()], capture_output=True, text=True, timeout=120,
                          check=False, env=os.environ | {"HOME": str(profile)})


@pytest.fixture(scope="module")
def report_html(spark, tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    storage = tmp_path_factory.mktemp("browser") / "storage"
    rows = [*ORDERS, (9, 17, -1.0, "EUR", ORDERS[0][4], PAYLOAD), (10, 18, 0.0, "X" * 4000, None, IMG_PAYLOAD)]
    df = spark.createDataFrame(rows, ORDERS_DDL)
    bad = split_quarantine(df, load_rules("orders_clean"), update_id="u-2")[1]
    append_quarantine(bad, str(storage / "tables" / "orders_clean_quarantine"))
    write_update(spark, storage, "u-1", [FlowRun("orders_clean", 9, [("amount_positive", 10, 0)])],
                 pipeline="sample", full_refresh=True)
    write_update(spark, storage, "u-2", [
        FlowRun("orders_raw", 10, extra_metrics={"num_rescued_records": 2}),
        FlowRun("orders_clean", 3, [("amount_positive", 6, 4), ("known_currency", 9, 1),
                                    ("order_ts_present", 8, 2), ("known_status", 8, 2),
                                    (PAYLOAD, 9, 1)], dropped=7),
        FlowRun("orders_clean_quarantine", 7),
        FlowRun("customers", 0, status="FAILED", error=f"bad value {IMG_PAYLOAD}"),
    ], pipeline=f"sample {PAYLOAD}")
    return build_report(spark, storage, out_dir=tmp_path_factory.mktemp("report")).html


def test_report_renders_values_as_text_in_chromium(report_html: Path, tmp_path: Path) -> None:
    binary = chromium()
    if binary is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    result = run_chromium(binary, report_html, tmp_path / "profile", "--dump-dom")
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    assert "<main>" in dom and "Data quality report" in dom
    assert "data-pwned" not in re.search(r"<body[^>]*>", dom).group(0)  # type: ignore[union-attr]
    # the injected markup is a text node, not an element
    assert "&lt;script&gt;document.body.setAttribute('data-pwned','script')&lt;/script&gt;" in dom
    assert "&lt;img src=x onerror=" in dom
    assert not re.search(r"<script\b", dom, re.I) and not re.search(r"<img\b", dom, re.I)
    assert "amount_positive" in dom and "orders_clean" in dom and "FAILED" in dom

    shot = tmp_path / "report.png"
    result = run_chromium(binary, report_html, tmp_path / "profile2", f"--screenshot={shot}",
                          "--window-size=1280,2400")
    assert result.returncode == 0 and shot.stat().st_size > 20_000, result.stderr[-2000:]
    keep = os.environ.get("MEDALLION_REPORT_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)

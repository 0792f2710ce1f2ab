"""The command line over the sample pipeline, in fresh processes as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.spark


def medallion(*args: str, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run([sys.executable, "-m", "framework.cli", *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture
def sample_spec(tmp_path: Path) -> Path:
    """conf/sample.yaml with its landing folder and storage moved into the test's temp dir."""
    raw = yaml.safe_load((REPO_ROOT / "conf" / "sample.yaml").read_text())
    raw["root"] = str(REPO_ROOT)
    raw["storage"] = str(tmp_path / "storage")
    raw["paths"] = {"dbfs:/mnt/landing": str(tmp_path / "landing")}
    raw.pop("environments")
    spec = tmp_path / "sample.yaml"
    spec.write_text(yaml.safe_dump(raw))
    return spec


def test_validate_and_graph_the_sample(sample_spec: Path, tmp_path: Path) -> None:
    from framework.sample_data import write_customer_changes, write_orders

    # Auto Loader infers the bronze schemas from the landed files (an empty folder cannot be inferred, as on
    # Databricks), so land a batch first.
    write_orders(tmp_path / "landing" / "orders", 1, files=1, rows_per_file=20)
    write_customer_changes(tmp_path / "landing" / "customers", 1)
    validate = medallion("validate", str(sample_spec))
    assert validate.returncode == 0, validate.stderr
    assert "pipeline 'sample_medallion' is valid" in validate.stdout
    graph = medallion("graph", str(sample_spec), "--out", str(tmp_path / "graph"))
    assert graph.returncode == 0, graph.stderr
    mermaid = (tmp_path / "graph" / "graph.mmd").read_text()
    for layer in ("bronze", "silver", "gold"):
        assert f"subgraph {layer}" in mermaid
    assert "n_orders_clean --> n_daily_revenue_by_country" in mermaid
    assert "<svg" in (tmp_path / "graph" / "graph.html").read_text()


def test_invalid_pipeline_names_file_line_and_fix(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "p.py").write_text(
        "import dlt\n\n@dlt.table\ndef orders():\n    return spark.range(3)\n\n"
        "@dlt.table\ndef report():\n    return dlt.read('orderz')\n")
    (tmp_path / "spec.yaml").write_text("name: broken\nlibraries: [{glob: {include: p/**}}]\n")
    result = medallion("validate", str(tmp_path / "spec.yaml"), "--static")
    assert result.returncode == 1
    assert "UNRESOLVED_DATASET" in result.stderr and "Did you mean 'orders'?" in result.stderr
    assert f"{tmp_path / 'p' / 'p.py'}:7" in result.stderr
    bad_spec = tmp_path / "bad.yaml"
    bad_spec.write_text("nme: x\nlibraries: 3\n")
    result = medallion("validate", str(bad_spec), "--static")
    assert result.returncode == 2
    assert "did you mean 'name'" in result.stderr and "INVALID_LIBRARIES" in result.stderr


def test_demo_runs_the_sample_twice_incrementally(sample_spec: Path, tmp_path: Path) -> None:
    result = medallion("demo", "--spec", str(sample_spec))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summaries = result.stdout.split("Update ")
    assert len([s for s in summaries if "COMPLETED in" in s]) == 2
    first, second = (s for s in summaries if "COMPLETED in" in s)
    orders_first = next(line for line in first.splitlines() if line.startswith("orders_raw "))
    orders_second = next(line for line in second.splitlines() if line.startswith("orders_raw "))
    assert " 1001 " in orders_first and " 1001 " in orders_second  # each update ingests only its own batch
    assert "expect positive_amount [drop]" in first
    assert "report:" in result.stdout and (tmp_path / "storage" / "reports" / "dq_report.html").exists()
    assert "daily_revenue_by_country" in result.stdout

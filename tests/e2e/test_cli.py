"""The command line over the sample pipeline, in fresh processes as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
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


def _tiny_pipeline(tmp_path: Path) -> Path:
    (tmp_path / "p").mkdir(exist_ok=True)
    (tmp_path / "p" / "p.py").write_text("import dlt\n\n@dlt.table\ndef orders():\n    return spark.range(3)\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: tiny\nstorage: {tmp_path / 'storage'}\nlibraries: [{{glob: {{include: p/**}}}}]\n")
    return spec


def test_bad_specs_fail_fast_with_exit_2_and_no_traceback(tmp_path: Path) -> None:
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("name: caf\xe9\nlibraries: []\n".encode("latin-1"))
    missing = tmp_path / "missing.yaml"
    missing.write_text("name: m\nlibraries: [{file: {path: gone_a.py}}, {notebook: {path: gone_b}}]\n")
    started = time.monotonic()
    for spec, expected in ((latin1, ["SPEC_NOT_UTF8", str(latin1)]), (tmp_path, ["SPEC_IS_A_DIRECTORY"]),
                           (missing, ["gone_a.py", "gone_b", "LIBRARY_NOT_FOUND"])):
        result = medallion("validate", str(spec))  # not --static: Spark would start after the spec load
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        assert all(text in result.stderr for text in expected), result.stderr
    assert time.monotonic() - started < 60  # three interpreter starts; no JVM (a JVM start alone takes longer)


def test_missing_java_is_one_line_saying_how_to_install_a_jdk(tmp_path: Path) -> None:
    spec = _tiny_pipeline(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), JAVA_HOME=str(tmp_path / "no-jdk"))
    result = subprocess.run([sys.executable, "-m", "framework.cli", "validate", str(spec)], cwd=REPO_ROOT, env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "JAVA_NOT_FOUND" in lines[0] and "apt-get install openjdk-17-jdk-headless" in lines[0]
    assert "JAVA_GATEWAY_EXITED" not in result.stderr


def test_unexpected_errors_print_one_message_and_the_traceback_only_on_request(tmp_path: Path) -> None:
    spec = _tiny_pipeline(tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    result = medallion("graph", str(spec), "--static", "--out", str(blocker / "graph"))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: NotADirectoryError: ") or \
        result.stderr.startswith("error: FileExistsError: "), result.stderr
    assert "MEDALLION_DEBUG=1" in result.stderr
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), MEDALLION_DEBUG="1")
    debug = subprocess.run([sys.executable, "-m", "framework.cli", "graph", str(spec), "--static", "--out",
                            str(blocker / "graph")], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                           timeout=300, check=False)
    assert debug.returncode == 1 and "Traceback (most recent call last)" in debug.stderr

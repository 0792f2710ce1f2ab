"""Secrets never appear in clear (issue 19): a pipeline that prints a secret and puts it in exception messages,
run with the command line in fresh processes; the secret is nowhere in their output, the event log or the report.

On Databricks, values read with ``dbutils.secrets.get`` show as ``[REDACTED]`` in output; table data is not
redacted (this pipeline writes none that holds the secret, so the whole storage root is searched).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).parent / "fixtures" / "secrets"
SECRET = "sk-e2e-Qz7fW3kP9x"  # appears nowhere else in the framework, the pipeline or Spark's messages
REDACTED = "[REDACTED]"


def medallion(*args: str, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), DATABRICKS_SECRET_E2E_SCOPE_API_TOKEN=SECRET)
    return subprocess.run([sys.executable, "-m", "framework.cli", *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The fixture pipeline copied to a temp dir (its spec's root), so that nothing is written in the repo."""
    shutil.copytree(FIXTURE, tmp_path / "project")
    return tmp_path / "project"


def leaks_in_files(root: Path) -> list[str]:
    """Every file under ``root`` that holds the secret: parquet files by their decoded values (their pages are
    compressed), every other file by its bytes."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.suffix == ".parquet":
            text = json.dumps(pq.read_table(path).to_pylist(), default=str)
        else:
            text = path.read_bytes().decode("utf-8", errors="replace")
        if SECRET in text:
            found.append(str(path.relative_to(root)))
    return found


def read_events(storage: Path) -> list[dict]:
    files = sorted((storage / "system" / "events").glob("*.parquet"))
    assert files, "the update wrote no event log"
    return [row for path in files for row in pq.read_table(path).to_pylist()]


def test_validate_prints_the_secret_redacted(project: Path, tmp_path: Path) -> None:
    result = medallion("validate", str(project / "spec.yaml"), "--storage", str(tmp_path / "storage"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert f"loading with token {REDACTED}" in result.stdout  # the pipeline did read and print it
    assert f"api_rows: authenticating with {REDACTED}" in result.stdout
    assert "pipeline 'secrets_e2e' is valid" in result.stdout

    early = medallion("validate", str(project / "spec.yaml"), "--env", "early",
                      "--storage", str(tmp_path / "storage"))
    assert early.returncode == 1, early.stdout + early.stderr
    assert SECRET not in early.stdout + early.stderr
    assert f"the API refused token {REDACTED} while the query was defined" in early.stderr


def test_run_keeps_the_secret_out_of_output_event_log_and_report(project: Path, tmp_path: Path) -> None:
    """A flow fails while it runs, in a Python UDF: the message comes back through the JVM."""
    storage = tmp_path / "storage"
    result = medallion("run", str(project / "spec.yaml"), "--storage", str(storage))
    output = result.stdout + result.stderr
    assert result.returncode == 1, output  # api_calls fails
    assert SECRET not in output
    assert f"loading with token {REDACTED}" in output
    assert any("api_rows" in line and "COMPLETED" in line for line in result.stdout.splitlines()), output
    assert any("api_calls" in line and "FAILED" in line for line in result.stdout.splitlines()), output

    events = read_events(storage)
    assert any(e["event_type"] == "flow_progress" and e["origin"]["flow_name"] == "api_calls"
               and e["level"] == "ERROR" for e in events), "no FAILED event for api_calls"
    assert SECRET not in json.dumps(events, default=str)
    assert sorted(p.name for p in (storage / "reports").iterdir()) == ["dq_report.html", "dq_report.json"]
    assert leaks_in_files(storage) == []


def test_failed_update_records_the_secret_redacted(project: Path, tmp_path: Path) -> None:
    """The update fails while its queries are defined, with the secret in the error message: the console, the
    summary and the event log's error show it as [REDACTED]."""
    storage = tmp_path / "storage"
    result = medallion("run", str(project / "spec.yaml"), "--env", "early", "--storage", str(storage))
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert SECRET not in output
    assert f"the API refused token {REDACTED} while the query was defined" in result.stdout  # the summary

    events = read_events(storage)
    failed = [e for e in events if e["event_type"] == "update_progress" and e["level"] == "ERROR"]
    assert len(failed) == 1, events
    messages = [x["message"] for x in failed[0]["error"]["exceptions"]]
    assert any(f"the API refused token {REDACTED} while the query was defined" in m for m in messages), messages
    assert SECRET not in json.dumps(events, default=str)
    assert leaks_in_files(storage) == []


def test_a_secret_reference_in_the_configuration_is_read_as_the_secret(tmp_path: Path) -> None:
    """``{{secrets/<scope>/<key>}}`` in the spec's configuration (``framework/secret_refs.py``): pipeline code
    reads the secret's value with ``spark.conf.get``, the output shows it redacted, and the event log's
    create_update keeps the reference as written."""
    (tmp_path / "p.py").write_text(
        "import dlt\n"
        "token = spark.conf.get('api.token')\n"
        "print('conf token', token)\n\n\n"
        "@dlt.table\n"
        "def token_length():\n"
        "    return spark.range(1).selectExpr(f'{len(token)} AS n')\n")
    (tmp_path / "spec.yaml").write_text(
        "name: secret_refs\nschema: secret_refs\nlibraries: [{file: {path: p.py}}]\n"
        "configuration: {api.token: '{{secrets/e2e_scope/api_token}}'}\n")
    storage = tmp_path / "storage"
    result = medallion("run", str(tmp_path / "spec.yaml"), "--storage", str(storage), "--no-report")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert f"conf token {REDACTED}" in output and SECRET not in output
    rows = pq.read_table(next((storage / "tables" / "token_length").glob("*.parquet"))).to_pylist()
    assert rows == [{"n": len(SECRET)}]
    events = read_events(storage)
    assert SECRET not in json.dumps(events, default=str)
    created = [e for e in events if e["event_type"] == "create_update"]
    assert "{{secrets/e2e_scope/api_token}}" in json.dumps(created, default=str)


def test_a_secret_reference_not_set_locally_fails_the_update_with_its_summary(tmp_path: Path) -> None:
    (tmp_path / "p.py").write_text("import dlt\n\n\n@dlt.table\ndef t():\n    return spark.range(1)\n")
    (tmp_path / "spec.yaml").write_text("name: secret_missing\nschema: secret_missing\n"
                                        "libraries: [{file: {path: p.py}}]\n"
                                        "configuration: {api.token: '{{secrets/absent_scope/key}}'}\n")
    storage = tmp_path / "storage"
    result = medallion("run", str(tmp_path / "spec.yaml"), "--storage", str(storage), "--no-report")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAILED" in result.stdout and "SECRET_NOT_FOUND" in result.stdout + result.stderr
    assert "DATABRICKS_SECRET_ABSENT_SCOPE_KEY" in result.stdout + result.stderr  # how to set it
    assert "Traceback" not in result.stdout + result.stderr
    failed = [e for e in read_events(storage) if e["event_type"] == "update_progress" and e["level"] == "ERROR"]
    assert len(failed) == 1

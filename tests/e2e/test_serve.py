"""``medallion serve``: a real server process per test (each start costs a JVM start), driven by the command
line in fresh processes as a user runs it, and compared with the same commands run in-process."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from framework.serve.paths import ServePaths, pid_alive
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.spark

TINY = '''\
import os

import dlt
from lib import helpers

print("label", helpers.LABEL)
if os.environ.get("MEDALLION_TEST_SECRET") == "1":
    print("secret", dbutils.secrets.get("s", "k"))
print("word", os.environ.get("MEDALLION_TEST_WORD", "-"))
if os.environ.get("MEDALLION_TEST_FAIL") == "1":
    raise ValueError("boom")


@dlt.table
def numbers():
    return spark.range(3)
'''


def medallion(repo: Path, *args: str, in_process: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("MEDALLION_", "DATABRICKS_SECRET_"))}
    environ.update(PYTHONPATH=str(REPO_ROOT), **env)
    if in_process:
        environ["MEDALLION_NO_SERVER"] = "1"
    return subprocess.run([sys.executable, "-m", "framework.cli", *args], cwd=repo, env=environ,
                          capture_output=True, text=True, timeout=900, check=False)


def start(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    started = medallion(repo, "serve", *args)
    assert started.returncode == 0, started.stdout + started.stderr
    return started


def served(repo: Path) -> int:
    """How many requests the server's log says it ran."""
    return (repo / ".medallion" / "serve.log").read_text().count("medallion serve: request:")


def masked(summary: str, storage: Path) -> str:
    """A run's summary without what differs between two runs: update ids and timings (with their padding)."""
    summary = summary.replace(str(storage), "<storage>")
    summary = re.sub(r"Update [0-9a-f]{8}", "Update <id>", summary)
    return re.sub(r" +\d+\.\ds\b", " <t>", summary)  # right-aligned: a longer time takes the padding


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository (a folder with .git) with the sample spec, its first batch landed, and a tiny pipeline that
    imports a helper module of the repository."""
    from framework.sample_data import write_customer_changes, write_orders

    repo = tmp_path / "r"
    (repo / ".git").mkdir(parents=True)
    raw = yaml.safe_load((REPO_ROOT / "conf" / "sample.yaml").read_text())
    raw.pop("environments")
    raw.update(root=str(REPO_ROOT), storage=str(repo / "storage"), paths={"dbfs:/mnt/landing": str(repo / "landing")})
    (repo / "sample.yaml").write_text(yaml.safe_dump(raw))
    write_orders(repo / "landing" / "orders", 1)
    write_customer_changes(repo / "landing" / "customers", 1)
    (repo / "lib").mkdir()
    (repo / "lib" / "__init__.py").write_text("")
    (repo / "lib" / "helpers.py").write_text('LABEL = "one"\n')
    (repo / "pipe").mkdir()
    (repo / "pipe" / "p.py").write_text(TINY)
    (repo / "tiny.yaml").write_text(f"name: tiny\nschema: tiny\nstorage: {repo / 'tiny_storage'}\n"
                                    "libraries: [{file: {path: pipe/p.py}}]\n")
    return repo


def test_warm_server_runs_commands_as_in_process(repo: Path) -> None:
    started = start(repo, "--idle-timeout", "900")
    paths = ServePaths(repo)
    assert f"listening on {paths.socket}" in started.stdout
    assert stat.S_IMODE(paths.folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(paths.socket.stat().st_mode) == 0o600
    assert medallion(repo, "serve", "--status").returncode == 0
    pid = paths.read_pid()
    assert pid is not None and pid_alive(pid)
    try:
        _same_output(repo)
        # the first command came as the server was warming up: it interrupted the warm-up and did not wait for it
        assert "warm-up interrupted by a command" in (repo / ".medallion" / "serve.log").read_text()
        _fresh_modules_errors_and_secrets(repo)
        _ctrl_c(repo)
    finally:
        stopped = medallion(repo, "serve", "--stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert not pid_alive(pid) and not paths.socket.exists() and not paths.pid.exists()
    assert medallion(repo, "serve", "--status").returncode == 1


def _same_output(repo: Path) -> None:
    """validate: stdout byte for byte; run: the summary apart from update ids and timings; exit codes."""
    warm = medallion(repo, "validate", "sample.yaml")
    cold = medallion(repo, "validate", "sample.yaml", in_process=True)
    assert (warm.returncode, warm.stdout) == (cold.returncode, cold.stdout) == (0, cold.stdout)
    assert served(repo) == 1
    storage = repo / "storage"
    cold_run = medallion(repo, "run", "sample.yaml", "--no-report", in_process=True)
    assert cold_run.returncode == 0, cold_run.stderr
    subprocess.run(["rm", "-rf", str(storage)], check=True)
    warm_run = medallion(repo, "run", "sample.yaml", "--no-report")
    assert warm_run.returncode == 0, warm_run.stderr
    assert served(repo) == 2
    assert "COMPLETED" in warm_run.stdout and masked(warm_run.stdout, storage) == masked(cold_run.stdout, storage)
    missing = medallion(repo, "validate", "nope.yaml")  # a spec error: exit 2, same message
    assert (missing.returncode, missing.stderr) == (2, medallion(repo, "validate", "nope.yaml",
                                                                  in_process=True).stderr)


def _fresh_modules_errors_and_secrets(repo: Path) -> None:
    first = medallion(repo, "validate", "tiny.yaml", MEDALLION_TEST_SECRET="1", DATABRICKS_SECRET_S_K="hunter2")
    assert first.returncode == 0, first.stderr
    assert "label one" in first.stdout and "secret [REDACTED]" in first.stdout and "hunter2" not in first.stdout
    (repo / "lib" / "helpers.py").write_text('LABEL = "two"\n')  # an edit takes effect in the next command
    second = medallion(repo, "validate", "tiny.yaml", MEDALLION_TEST_WORD="hunter2")
    assert second.returncode == 0 and "label two" in second.stdout
    assert "word hunter2" in second.stdout  # the secret of the last command is not redacted (nor kept) any more
    no_secret = medallion(repo, "validate", "tiny.yaml", MEDALLION_TEST_SECRET="1")  # its environment is gone too
    assert no_secret.returncode == 1 and "SECRET_NOT_FOUND" in no_secret.stderr
    failed = medallion(repo, "validate", "tiny.yaml", MEDALLION_TEST_FAIL="1")
    assert failed.returncode == 1 and "LIBRARY_LOAD_FAILED" in failed.stderr and "boom" in failed.stderr
    again = medallion(repo, "run", "tiny.yaml")  # the server survived the failure
    assert again.returncode == 0 and "numbers" in again.stdout, again.stderr


def _ctrl_c(repo: Path) -> None:
    environ = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    environ.pop("MEDALLION_NO_SERVER", None)
    storage = repo / "interrupted"
    client = subprocess.Popen([sys.executable, "-m", "framework.cli", "run", "sample.yaml", "--storage",
                               str(storage)], cwd=repo, env=environ, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert client.stderr is not None
    seen = []
    for line in client.stderr:  # progress streams as it is written: interrupt once a flow runs
        seen.append(line)
        if "starting" in line:
            break
    client.send_signal(signal.SIGINT)
    _out, err = client.communicate(timeout=300)
    assert client.returncode == 130, "".join(seen) + err
    assert err.endswith("interrupted\n")
    after = medallion(repo, "run", "sample.yaml", "--storage", str(storage), "--no-report")
    assert after.returncode == 0, after.stderr  # the server runs on; the update lock was released


def test_crashed_server_is_replaced_and_an_idle_one_stops(repo: Path) -> None:
    paths = ServePaths(repo)
    start(repo)
    crashed = paths.read_pid()
    assert crashed is not None
    os.kill(crashed, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while pid_alive(crashed) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert paths.socket.exists()  # what a killed server leaves
    replaced = start(repo, "--idle-timeout", "8")
    assert f"replacing a server that is gone (pid {crashed})" in replaced.stdout
    pid = paths.read_pid()
    assert pid is not None and pid != crashed
    state = medallion(repo, "state", "sample.yaml")
    assert state.returncode == 0 and served(repo) == 1
    assert state.stdout == medallion(repo, "state", "sample.yaml", in_process=True).stdout
    deadline = time.monotonic() + 120
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not pid_alive(pid), "the server did not stop after its idle timeout"
    assert not paths.socket.exists() and not paths.pid.exists()
    assert "stopping: idle for 8 s" in (repo / ".medallion" / "serve.log").read_text()


def test_warm_up_runs_two_sample_updates_and_leaves_nothing(repo: Path) -> None:
    """Left alone, the server runs its two throw-away sample updates (``framework/serve/warmup.py``), removes
    their folder and schema, and then serves a command as in-process; ``--no-warm-up`` leaves them out."""
    import tempfile

    before = set(Path(tempfile.gettempdir()).glob("medallion-warm-up-*"))
    start(repo, "--idle-timeout", "900")
    log = repo / ".medallion" / "serve.log"
    deadline = time.monotonic() + 600
    while "warm-up " not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.5)
    try:
        assert re.search(r"warm-up done: 2 of 2 sample updates in [0-9.]+ s", log.read_text()), log.read_text()
        assert set(Path(tempfile.gettempdir()).glob("medallion-warm-up-*")) == before
        storage = repo / "storage"
        warm_run = medallion(repo, "run", "sample.yaml", "--no-report")
        assert warm_run.returncode == 0, warm_run.stderr
        subprocess.run(["rm", "-rf", str(storage)], check=True)
        cold_run = medallion(repo, "run", "sample.yaml", "--no-report", in_process=True)
        assert masked(warm_run.stdout, storage) == masked(cold_run.stdout, storage)
        assert "medallion_warm_up" not in warm_run.stdout + warm_run.stderr
    finally:
        medallion(repo, "serve", "--stop")
    start(repo, "--idle-timeout", "900", "--no-warm-up")
    try:
        assert medallion(repo, "state", "sample.yaml").returncode == 0
    finally:
        medallion(repo, "serve", "--stop")
    assert log.read_text().count("warm-up ") == 1

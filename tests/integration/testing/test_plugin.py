"""The plugin reaches pytest through the installed entry point, outside this repository too, and the repository's
own conftest does not register it a second time (pytest refuses a plugin registered twice)."""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.conftest import PLUGIN, REPO_ROOT

OUTSIDE_TEST = '''
def test_fixtures_come_from_the_plugin(storage, request):
    assert storage.is_dir()
    assert request.config.pluginmanager.get_plugin("medallion") is not None
'''


def pytest_run(args: list[str], cwd: Path, autoload: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_entry_point_declared_and_installed() -> None:
    setup = configparser.ConfigParser()
    setup.read(REPO_ROOT / "setup.cfg")
    assert setup["options.entry_points"]["pytest11"].split() == ["medallion", "=", PLUGIN]
    assert [ep.value for ep in entry_points(group="pytest11") if ep.name == "medallion"] == [PLUGIN], \
        "run `make setup` to install the entry point"


def test_outside_project_gets_the_fixtures(tmp_path: Path) -> None:
    (tmp_path / "test_outside.py").write_text(OUTSIDE_TEST)
    listed = pytest_run(["--fixtures", "test_outside.py"], tmp_path)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    for name in ("spark ", "storage ", "run_pipeline ", "pipeline_run "):
        assert name in listed.stdout
    ran = pytest_run(["test_outside.py"], tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr


@pytest.mark.parametrize("autoload", [True, False])
def test_repository_conftest_registers_the_plugin_once(autoload: bool) -> None:
    ran = pytest_run(["tests/unit/test_paths.py", "-x"], REPO_ROOT, autoload=autoload)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "already registered" not in ran.stdout + ran.stderr

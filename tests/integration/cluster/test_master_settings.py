"""The master of a session (``--master``, ``master:`` in conf/spark.yaml, spark-submit's) and the Python files
shipped to a cluster's executors, without Spark."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from framework.cli import build_parser
from framework.errors import EnvironmentSetupError
from framework.runner.session import _on_this_machine, master_conf, python_zip
from framework.settings import MASTER_ENV, load_local_settings, project_root, unknown_keys

LOCAL = {"spark.master": "local[2]", "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}


def test_master_key_and_the_environment_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MASTER_ENV, raising=False)
    path = tmp_path / "spark.yaml"
    path.write_text("master: spark://db1:7077\nspark_conf:\n  spark.master: local[1]\n")
    assert unknown_keys({"master": "x"}, str(path)) == []
    assert load_local_settings(path).master == "spark://db1:7077"
    monkeypatch.setenv(MASTER_ENV, "spark://127.0.0.1:7078")
    assert load_local_settings(path).master == "spark://127.0.0.1:7078"
    monkeypatch.delenv(MASTER_ENV)
    assert load_local_settings(project_root() / "conf" / "spark.yaml").master is None  # commented out there


def test_a_master_that_is_not_a_url_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MASTER_ENV, raising=False)
    path = tmp_path / "spark.yaml"
    path.write_text("master: [spark://a:7077]\n")
    with pytest.raises(EnvironmentSetupError) as info:
        load_local_settings(path)
    assert info.value.code == "INVALID_SPARK_SETTINGS" and info.value.file == str(path)


def test_the_master_decides_the_driver_address() -> None:
    assert master_conf(LOCAL, None) == LOCAL
    here = master_conf(LOCAL, "spark://127.0.0.1:7077")
    assert here["spark.master"] == "spark://127.0.0.1:7077" and here["spark.driver.host"] == "127.0.0.1"
    remote = master_conf(LOCAL, "spark://db1.example.com:7077")
    assert remote["spark.master"] == "spark://db1.example.com:7077"
    assert "spark.driver.host" not in remote and "spark.driver.bindAddress" not in remote  # executors elsewhere
    submitted = master_conf(LOCAL, None, submitted=True)  # spark-submit --master yarn: the launcher's wins
    assert "spark.master" not in submitted and "spark.driver.host" not in submitted
    assert master_conf({**LOCAL, "spark.driver.host": "10.0.0.5"}, "yarn")["spark.driver.host"] == "10.0.0.5"


@pytest.mark.parametrize(("master", "here"), [
    ("local[2]", True), ("local", True), ("local-cluster[2,1,1024]", True), ("spark://127.0.0.1:7077", True),
    ("spark://localhost:7077,127.0.0.2:7077", True), ("spark://127.0.0.1:7077,db2:7077", False),
    ("yarn", False), ("k8s://https://10.0.0.1:443", False), (None, False)])
def test_executors_on_this_machine(master: str | None, here: bool) -> None:
    assert _on_this_machine(master) is here


def test_a_pipeline_folder_ships_as_a_zip_of_its_modules(tmp_path: Path) -> None:
    folder = tmp_path / "pipe"
    (folder / "lib").mkdir(parents=True)
    (folder / "helpers.py").write_text("X = 1\n")
    (folder / "lib" / "__init__.py").write_text("")
    for skipped in (".git", "__pycache__", "storage/tables/t/_delta_log", "venv"):
        (folder / skipped).mkdir(parents=True)
        (folder / skipped / "x.py").write_text("")
    (folder / "venv" / "pyvenv.cfg").write_text("")
    (folder / "data.json").write_text("{}")
    out = tmp_path / "out"
    out.mkdir()
    archive = python_zip(folder, out)
    assert archive is not None and archive.name.startswith("pipe-")
    assert sorted(zipfile.ZipFile(archive).namelist()) == ["helpers.py", "lib/__init__.py"]
    assert python_zip(folder, out) == archive  # same content, same zip
    (folder / "helpers.py").write_text("X = 2\n")
    assert python_zip(folder, out) != archive  # an edit ships a new zip (addPyFile keeps the first of a name)
    assert python_zip(tmp_path / "out", out) is None


def test_master_flag_on_run_and_validate() -> None:
    parser = build_parser()
    assert parser.parse_args(["run", "s.yaml", "--master", "spark://h:7077"]).master == "spark://h:7077"
    assert parser.parse_args(["validate", "s.yaml", "--master", "local[1]"]).master == "local[1]"
    assert parser.parse_args(["run", "s.yaml"]).master is None

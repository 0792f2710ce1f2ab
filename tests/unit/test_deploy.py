"""The same spec deploys to Databricks: settings JSON and a bundle valid against Databricks' bundle schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from framework.deploy import bundle_config, pipeline_settings, write_deployment
from framework.errors import SpecError
from framework.spec import load_spec
from tests.conftest import REPO_ROOT

SCHEMA = REPO_ROOT.parent / "shared" / "reference" / "databricks_bundle_schema.json"


def test_sample_bundle_is_valid_against_the_bundle_schema(tmp_path: Path) -> None:
    spec = load_spec(REPO_ROOT / "conf" / "sample.yaml")
    prod = load_spec(REPO_ROOT / "conf" / "sample.yaml", env="prod")
    written = write_deployment(spec, tmp_path, prod)
    bundle = yaml.safe_load((tmp_path / "databricks.yml").read_text())
    if SCHEMA.exists():  # shared/ sits beside the repository in CI and in development
        jsonschema.validate(bundle, json.loads(SCHEMA.read_text()))
    pipeline = bundle["resources"]["pipelines"]["sample_medallion"]
    paths = [lib["file"]["path"] for lib in pipeline["libraries"]]
    assert "${workspace.file_path}/pipelines/sample/bronze.py" in paths
    assert pipeline["configuration"]["sample.landing"] == "dbfs:/mnt/landing"  # Databricks paths kept
    assert pipeline["target"] == "sample" and pipeline["development"] is True
    assert bundle["targets"]["prod"]["resources"]["pipelines"]["sample_medallion"]["development"] is False
    assert json.loads(written[0].read_text())["name"] == "sample_medallion"


def test_settings_round_trip_through_the_spec_parser(tmp_path: Path) -> None:
    spec = load_spec(REPO_ROOT / "conf" / "sample.yaml")
    settings = pipeline_settings(spec, workspace_root=str(REPO_ROOT))
    settings["storage"] = str(tmp_path / "storage")
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings))
    again = load_spec(path)
    assert again.name == spec.name and again.schema == spec.schema
    assert [lib.path for lib in again.libraries] == [lib["file"]["path"] for lib in settings["libraries"]]
    assert bundle_config(spec)["bundle"]["name"] == "sample_medallion"


def test_libraries_outside_the_project_root_are_a_spec_error_naming_each(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "common.py").write_text("x = 1\n")
    (tmp_path / "project" / "conf").mkdir(parents=True)
    (tmp_path / "project" / "p.py").write_text("x = 1\n")
    spec_path = tmp_path / "project" / "conf" / "spec.yaml"
    spec_path.write_text("name: outside\nlibraries:\n  - file: {path: p.py}\n  - file: {path: ../shared/common.py}\n")
    spec = load_spec(spec_path)
    with pytest.raises(SpecError) as info:
        write_deployment(spec, tmp_path / "deploy")
    assert info.value.codes == ["LIBRARY_OUTSIDE_ROOT"]
    assert str((tmp_path / "shared" / "common.py").resolve()) in str(info.value)
    spec_path.write_text("name: inside\nroot: ..\nlibraries:\n  - file: {path: project/p.py}\n"
                         "  - file: {path: shared/common.py}\n")
    inside = load_spec(spec_path)
    paths = [lib["file"]["path"] for lib in pipeline_settings(inside)["libraries"]]
    assert paths == ["${workspace.file_path}/project/p.py", "${workspace.file_path}/shared/common.py"]


def test_every_library_is_deployed_sql_files_and_sql_notebooks_included(tmp_path: Path) -> None:
    pipes = tmp_path / "pipelines"
    (pipes / "sql").mkdir(parents=True)
    (pipes / "bronze.py").write_text("import dlt\n")
    (pipes / "sql" / "silver.sql").write_text("CREATE MATERIALIZED VIEW silver AS SELECT * FROM bronze;\n")
    (pipes / "sql" / "gold_notebook").write_text("-- Databricks notebook source\nCREATE VIEW gold AS SELECT 1\n")
    (pipes / "sql" / "extra.sql").write_text("-- Databricks notebook source\nCREATE VIEW extra AS SELECT 1\n")
    (pipes / "sql" / "README.md").write_text("not a library\n")
    (tmp_path / "conf").mkdir()
    spec_path = tmp_path / "conf" / "spec.yaml"
    spec_path.write_text("name: mixed\nlibraries:\n  - file: {path: pipelines/bronze.py}\n"
                         "  - glob: {include: pipelines/sql/**}\n")
    libraries = pipeline_settings(load_spec(spec_path))["libraries"]
    assert libraries == [
        {"file": {"path": "${workspace.file_path}/pipelines/bronze.py"}},
        {"notebook": {"path": "${workspace.file_path}/pipelines/sql/extra.sql"}},
        {"notebook": {"path": "${workspace.file_path}/pipelines/sql/gold_notebook"}},
        {"file": {"path": "${workspace.file_path}/pipelines/sql/silver.sql"}},
    ]
    write_deployment(load_spec(spec_path), tmp_path / "deploy")
    bundle = yaml.safe_load((tmp_path / "deploy" / "databricks.yml").read_text())
    assert bundle["resources"]["pipelines"]["mixed"]["libraries"] == libraries
    if SCHEMA.exists():
        jsonschema.validate(bundle, json.loads(SCHEMA.read_text()))

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

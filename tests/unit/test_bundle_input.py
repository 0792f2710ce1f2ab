"""Issue 36: an Asset Bundle as the spec of a local run (``medallion run databricks.yml --pipeline facts``):
``include:``, ``variables``, ``targets``, two pipelines in ``resources/pipelines.yml`` chosen by key."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from framework.cli import build_parser
from framework.errors import SpecError
from framework.loader import resolve_libraries
from framework.paths import PathMapper
from framework.spec import load_spec

DATABRICKS_YML = """
bundle:
  name: shop
include:
  - resources/*.yml
variables:
  catalog:
    default: dev_catalog
  landing:
    description: where files land
    default: landing_root
targets:
  dev:
    default: true
  prod:
    variables:
      catalog: prod_catalog
    resources:
      pipelines:
        facts:
          development: false
"""

PIPELINES_YML = """
resources:
  pipelines:
    facts:
      name: facts-${bundle.target}
      catalog: ${var.catalog}
      schema: facts
      configuration:
        landing: ${var.landing}/facts
        kept: ${not_a_bundle_reference}
      libraries:
        - file:
            path: ../src/facts.py
    dims:
      name: dims
      schema: dims
      libraries:
        - glob:
            include: ../src/dims/**
"""


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    (tmp_path / "databricks.yml").write_text(textwrap.dedent(DATABRICKS_YML))
    (tmp_path / "resources").mkdir()
    (tmp_path / "resources" / "pipelines.yml").write_text(textwrap.dedent(PIPELINES_YML))
    (tmp_path / "src" / "dims").mkdir(parents=True)
    (tmp_path / "src" / "facts.py").write_text("")
    (tmp_path / "src" / "dims" / "d.sql").write_text("")
    return tmp_path / "databricks.yml"


def test_a_pipeline_by_key_with_variables_and_the_default_target(bundle: Path) -> None:
    spec = load_spec(bundle, pipeline="facts")
    assert (spec.name, spec.catalog, spec.schema, spec.development) == ("facts-dev", "dev_catalog", "facts", True)
    assert spec.configuration == {"landing": "landing_root/facts", "kept": "${not_a_bundle_reference}"}
    files = resolve_libraries(spec, PathMapper.from_spec(spec.paths, spec.root))
    assert files == [bundle.parent / "src" / "facts.py"]  # relative to resources/pipelines.yml


def test_a_target_and_the_other_pipeline(bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLE_VAR_landing", "/data")
    prod = load_spec(bundle, pipeline="facts", target="prod")
    assert (prod.name, prod.catalog, prod.development) == ("facts-prod", "prod_catalog", False)
    assert prod.configuration["landing"] == "/data/facts"
    dims = load_spec(bundle.parent / "resources" / "pipelines.yml", pipeline="dims")
    assert [f.name for f in resolve_libraries(dims, PathMapper.from_spec(dims.paths, dims.root))] == ["d.sql"]


@pytest.mark.parametrize(("kwargs", "code"), [
    ({}, "AMBIGUOUS_BUNDLE"), ({"pipeline": "nope"}, "UNKNOWN_BUNDLE_PIPELINE"),
    ({"pipeline": "facts", "target": "qa"}, "UNKNOWN_BUNDLE_TARGET"),
])
def test_bundle_mistakes(bundle: Path, kwargs: dict[str, str], code: str) -> None:
    with pytest.raises(SpecError) as info:
        load_spec(bundle, **kwargs)
    assert info.value.codes == [code]
    if code == "AMBIGUOUS_BUNDLE":
        assert "dims, facts" in str(info.value) and "--pipeline" in str(info.value)


def test_a_variable_without_value(bundle: Path) -> None:
    text = bundle.read_text().replace("    default: dev_catalog\n", "")
    bundle.write_text(text)
    with pytest.raises(SpecError) as info:
        load_spec(bundle, pipeline="facts")
    assert info.value.codes == ["UNKNOWN_BUNDLE_VARIABLE"] and "${var.catalog}" in str(info.value)


def test_cli_takes_pipeline_and_target() -> None:
    args = build_parser().parse_args(["run", "databricks.yml", "--pipeline", "facts", "--target", "prod"])
    assert (args.pipeline, args.target) == ("facts", "prod")

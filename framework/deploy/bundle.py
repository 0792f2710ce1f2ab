"""Turn a local spec into Databricks pipeline settings and a ``databricks.yml`` Asset Bundle.

The pipeline files are deployed as they are (the bundle syncs the repository); local-only settings (path
mappings, local Spark settings, storage under ``runs/``) are left out, and configuration values keep the
Databricks paths written in the spec (``dbfs:/...``), since those are what the code sees on Databricks.
Each library file becomes a ``file`` library (globs are expanded), which every bundle schema version accepts, or a
``notebook`` library for notebook sources (Python or SQL); ``.sql`` files are libraries like ``.py`` ones.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from framework.errors import Problem, SpecError
from framework.loader import resolve_libraries
from framework.notebook import is_notebook_source
from framework.paths import PathMapper
from framework.spec import PipelineSpec
from framework.sql.split import is_sql_notebook

WORKSPACE_ROOT = "${workspace.file_path}"


def _resource_key(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name).lower()


def pipeline_settings(spec: PipelineSpec, *, workspace_root: str = WORKSPACE_ROOT,
                      development: bool | None = None) -> dict[str, Any]:
    """Databricks pipeline settings (the shape of the Pipelines API and of a bundle's pipeline resource)."""
    settings: dict[str, Any] = {
        "name": spec.name,
        "libraries": _libraries(spec, workspace_root),
        "configuration": dict(spec.configuration),
        "target": spec.schema,
        "development": spec.development if development is None else development,
        "continuous": spec.continuous,
        "channel": spec.channel,
        "edition": spec.edition,
    }
    if spec.catalog:
        settings["catalog"] = spec.catalog
    for key in ("photon", "serverless", "clusters", "notifications", "trigger"):
        if key in spec.extra:
            settings[key] = spec.extra[key]
    if not spec.catalog and "serverless" not in settings:
        settings["photon"] = bool(spec.extra.get("photon", False))
    return settings


def _libraries(spec: PipelineSpec, workspace_root: str) -> list[dict[str, Any]]:
    """One ``file`` or ``notebook`` library per resolved file, by its path under the project root (which the
    bundle syncs to ``workspace_root``)."""
    files = resolve_libraries(spec, PathMapper.from_spec(spec.paths, spec.root))
    root = spec.root.resolve()
    outside = [path for path in files if not path.resolve().is_relative_to(root)]
    if outside:
        raise SpecError(spec.source, [Problem(
            "LIBRARY_OUTSIDE_ROOT", f"library file {path} lies outside the project root {root}, which is what "
            "the bundle syncs to the workspace; move it under the root, or set `root:` in the spec to a folder "
            "that holds every library", spec.source) for path in outside])
    libraries = []
    for path in files:
        relative = path.resolve().relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        kind = "notebook" if is_notebook_source(text) or is_sql_notebook(text) else "file"
        libraries.append({kind: {"path": f"{workspace_root}/{relative}"}})
    return libraries


def bundle_config(spec: PipelineSpec, prod_spec: PipelineSpec | None = None) -> dict[str, Any]:
    """A ``databricks.yml`` with the pipeline as a resource and ``dev`` (default) / ``prod`` targets."""
    key = _resource_key(spec.name)
    config: dict[str, Any] = {
        "bundle": {"name": key},
        "sync": {"include": ["pipelines/**", "framework/**", "expectations/**"]},
        "resources": {"pipelines": {key: pipeline_settings(spec, development=True)}},
        "targets": {
            "dev": {"mode": "development", "default": True},
            "prod": {"mode": "production"},
        },
    }
    if prod_spec is not None:
        prod = pipeline_settings(prod_spec, development=False)
        config["targets"]["prod"]["resources"] = {"pipelines": {key: {
            k: v for k, v in prod.items() if k in ("configuration", "target", "catalog", "development")}}}
    return config


def write_deployment(spec: PipelineSpec, out_dir: Path, prod_spec: PipelineSpec | None = None) -> list[Path]:
    """Write ``<name>.pipeline.json`` (settings for the Pipelines API / UI JSON editor) and ``databricks.yml``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    settings_path = out_dir / f"{_resource_key(spec.name)}.pipeline.json"
    settings = pipeline_settings(spec, workspace_root="/Workspace/Repos/<user>/<repo>")
    settings_path.write_text(json.dumps(settings, indent=2) + "\n")
    bundle_path = out_dir / "databricks.yml"
    bundle_path.write_text(yaml.safe_dump(bundle_config(spec, prod_spec), sort_keys=False))
    return [settings_path, bundle_path]

"""The checks ``databricks bundle validate`` makes that a schema cannot: run on every bundle ``deploy`` writes.

- Every path a resource names under ``${workspace.file_path}`` is a file in the bundle folder and is synced: the
  CLI syncs only the folder holding ``databricks.yml``, so a path outside it, or left out of ``sync.include``
  where that list is given, is missing on the workspace.
- A ``mode: production`` target may not deploy a pipeline with ``development: true`` (after merging the
  target's resources over the bundle's), and must set ``workspace.root_path`` unless it runs as a service
  principal (``run_as``), so that one copy is deployed (the CLI refuses both: Databricks' bundle deployment
  modes page).
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

WORKSPACE_ROOT = "${workspace.file_path}"


def _workspace_paths(value: Any) -> list[str]:
    """Every string under ``value`` that starts with the bundle's workspace file path."""
    if isinstance(value, dict):
        return [path for item in value.values() for path in _workspace_paths(item)]
    if isinstance(value, list):
        return [path for item in value for path in _workspace_paths(item)]
    if isinstance(value, str) and value.startswith(WORKSPACE_ROOT + "/"):
        return [value[len(WORKSPACE_ROOT) + 1:]]
    return []


def _synced(relative: str, includes: list[str] | None) -> bool:
    return includes is None or any(
        fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(relative, pattern.removesuffix("/**") + "/*")
        for pattern in includes)


def missing_paths(bundle: dict[str, Any], bundle_dir: Path) -> list[str]:
    """The workspace paths the resources name that the bundle folder does not hold or does not sync."""
    includes = bundle.get("sync", {}).get("include")
    return [relative for relative in _workspace_paths(bundle.get("resources", {}))
            if not (bundle_dir / relative).is_file() or not _synced(relative, includes)]


def production_problems(bundle: dict[str, Any]) -> list[str]:
    """What the CLI's production mode refuses in each ``mode: production`` target."""
    problems = []
    base = bundle.get("resources", {}).get("pipelines", {})
    for name, target in bundle.get("targets", {}).items():
        if target.get("mode") != "production":
            continue
        overrides = target.get("resources", {}).get("pipelines", {})
        for key, pipeline in base.items():
            development = overrides.get(key, {}).get("development", pipeline.get("development", False))
            if development:
                problems.append(f"target {name!r} has mode: production but pipeline {key!r} keeps "
                                "development: true")
        if "run_as" not in target and "root_path" not in target.get("workspace", {}):
            problems.append(f"target {name!r} has mode: production but sets no workspace.root_path "
                            "(the CLI requires one so that only one copy is deployed)")
    return problems

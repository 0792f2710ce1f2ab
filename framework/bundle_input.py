"""A Databricks Asset Bundle as the spec of a local run: ``medallion run databricks.yml --pipeline facts
[--target dev]``, as ``databricks bundle run facts -t dev``.

The bundle's pipelines are its ``resources.pipelines`` and those of the files its ``include:`` globs name
(relative to ``databricks.yml``), each keyed as in the bundle. The target is the one named, else the one with
``default: true``, else none; its ``variables`` and its ``resources.pipelines.<key>`` settings apply over the
bundle's. ``${var.name}`` (a variable's target value, else ``BUNDLE_VAR_<name>`` from the environment, else
its ``default``), ``${bundle.name}`` and ``${bundle.target}`` are substituted in the pipeline's settings; a
variable with no value is an error naming it. Relative library paths are relative to the file that defines the
pipeline, as Databricks resolves them. A bundle with several pipelines needs ``--pipeline``.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from framework.errors import Problem, SpecError

_REFERENCE = re.compile(r"\$\{(var|bundle)\.([A-Za-z0-9_.-]+)\}")


def is_bundle(raw: Any) -> bool:
    """Whether settings read from a file are a bundle (rather than one pipeline's settings)."""
    return isinstance(raw, dict) and ("bundle" in raw or "include" in raw or "targets" in raw or
                                      isinstance((raw.get("resources") or {}).get("pipelines"), dict))


def bundle_pipeline(raw: dict[str, Any], path: Path, *, pipeline: str | None, target: str | None
                    ) -> tuple[dict[str, Any], Path]:
    """The settings of one pipeline of the bundle ``raw`` (read from ``path``), with the target's settings
    and variables applied, and the folder its relative paths are relative to. Raises SpecError."""
    source = str(path)
    pipelines = _pipelines(raw, path.parent, source)
    key = _key(pipelines, pipeline, source)
    settings, folder = copy.deepcopy(pipelines[key][0]), pipelines[key][1]
    chosen, target_settings = _target(raw, target, source)
    overrides = ((target_settings.get("resources") or {}).get("pipelines") or {}).get(key)
    if isinstance(overrides, dict):
        settings = _merge(settings, overrides)
    values = _variables(raw, target_settings, source)
    names = {"name": str((raw.get("bundle") or {}).get("name", "")), "target": chosen or ""}
    problems: list[Problem] = []
    resolved = _substitute(settings, values, names, problems, source)
    if problems:
        raise SpecError(source, problems)
    return resolved, folder


def _pipelines(raw: dict[str, Any], root: Path, source: str) -> dict[str, tuple[dict[str, Any], Path]]:
    found: dict[str, tuple[dict[str, Any], Path]] = {}
    for settings, folder in [(raw, root), *_included(raw, root, source)]:
        for key, value in ((settings.get("resources") or {}).get("pipelines") or {}).items():
            if not isinstance(value, dict):
                raise SpecError(source, [Problem("SPEC_NOT_A_MAPPING", f"bundle pipeline '{key}' must be a "
                                                 "mapping of settings", source)])
            found[str(key)] = (value, folder)
    return found


def _included(raw: dict[str, Any], root: Path, source: str) -> list[tuple[dict[str, Any], Path]]:
    out = []
    for pattern in raw.get("include") or []:
        matches = sorted(root.glob(str(pattern)))
        if not matches:
            raise SpecError(source, [Problem("BUNDLE_INCLUDE_NOT_FOUND", f"include '{pattern}' matches no file "
                                             f"under {root}", source)])
        for file in matches:
            try:
                data = yaml.safe_load(file.read_text(encoding="utf-8"))
            except (OSError, yaml.YAMLError) as exc:
                raise SpecError(source, [Problem("SPEC_PARSE_ERROR", f"{file}: {str(exc).splitlines()[0]}",
                                                 str(file))]) from None
            if isinstance(data, dict):
                out.append((data, file.parent))
    return out


def _key(pipelines: Mapping[str, Any], pipeline: str | None, source: str) -> str:
    keys = ", ".join(sorted(pipelines))
    if pipeline is not None:
        if pipeline not in pipelines:
            raise SpecError(source, [Problem("UNKNOWN_BUNDLE_PIPELINE", f"the bundle has no pipeline '{pipeline}'"
                                             f" (its pipelines: {keys or 'none'})", source)])
        return pipeline
    if len(pipelines) != 1:
        raise SpecError(source, [Problem("AMBIGUOUS_BUNDLE", f"the bundle defines {len(pipelines)} pipelines "
                                         f"({keys}); choose one with --pipeline KEY", source)])
    return next(iter(pipelines))


def _target(raw: dict[str, Any], target: str | None, source: str) -> tuple[str | None, dict[str, Any]]:
    targets = raw.get("targets") or {}
    if target is None:
        target = next((name for name, t in targets.items() if isinstance(t, dict) and t.get("default")), None)
        return target, (targets.get(target) or {}) if target else {}
    if target not in targets:
        raise SpecError(source, [Problem("UNKNOWN_BUNDLE_TARGET", f"the bundle has no target '{target}' "
                                         f"(its targets: {', '.join(sorted(targets)) or 'none'})", source)])
    return target, targets[target] or {}


def _variables(raw: dict[str, Any], target: Mapping[str, Any], source: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for name, spec in (raw.get("variables") or {}).items():
        default = spec.get("default") if isinstance(spec, dict) else spec
        if default is not None:
            values[str(name)] = str(default)
        if f"BUNDLE_VAR_{name}" in os.environ:
            values[str(name)] = os.environ[f"BUNDLE_VAR_{name}"]
    for name, value in (target.get("variables") or {}).items():
        values[str(name)] = str(value.get("default") if isinstance(value, dict) else value)
    return values


def _substitute(value: Any, variables: Mapping[str, str], bundle: Mapping[str, str], problems: list[Problem],
                source: str) -> Any:
    if isinstance(value, dict):
        return {k: _substitute(v, variables, bundle, problems, source) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, variables, bundle, problems, source) for v in value]
    if not isinstance(value, str):
        return value

    def replace(match: re.Match[str]) -> str:
        kind, name = match.group(1), match.group(2)
        table = variables if kind == "var" else bundle
        if name not in table:
            problems.append(Problem("UNKNOWN_BUNDLE_VARIABLE", f"${{{kind}.{name}}} has no value: declare it "
                                    "under `variables:` with a default, or set it in the target", source))
            return match.group(0)
        return table[name]

    return _REFERENCE.sub(replace, value)


def _merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        out[key] = _merge(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), dict) \
            else value
    return out

"""Pipeline specs: a YAML file under ``conf/`` or a Databricks pipeline settings JSON → :class:`PipelineSpec`.

Every problem in a spec is reported at once (:class:`framework.errors.SpecError`). YAML specs may carry
``environments:`` overrides (e.g. ``dev``/``prod``) merged over the base when ``env`` is chosen.
"""

from __future__ import annotations

import copy
import difflib
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from framework.errors import PipelineError, Problem, SpecError

LibraryKind = Literal["file", "notebook", "glob"]

# Keys of Databricks pipeline settings (accepted; those the shim does not use are kept in `extra`).
DATABRICKS_KEYS = {
    "id", "name", "libraries", "configuration", "catalog", "schema", "target", "storage", "continuous",
    "development", "channel", "edition", "photon", "serverless", "clusters", "event_log", "notifications",
    "allow_duplicate_names", "budget_policy_id", "root_path", "environment", "tags", "deployment", "filters",
    "trigger", "run_as", "restart_window", "dry_run", "gateway_definition", "ingestion_definition",
    "permissions", "usage_policy_id",
}
# Local-only keys (YAML specs; also accepted in JSON).
LOCAL_KEYS = {"paths", "spark_conf", "environments", "root", "description", "layers"}


@dataclass(frozen=True)
class Library:
    kind: LibraryKind
    path: str


@dataclass(frozen=True)
class PipelineSpec:
    """A validated pipeline spec. Paths are absolute."""

    name: str
    source: str
    root: Path
    libraries: tuple[Library, ...]
    storage: Path
    configuration: Mapping[str, str] = field(default_factory=dict)
    catalog: str | None = None
    schema: str = "default"
    development: bool = True
    continuous: bool = False
    channel: str = "CURRENT"
    edition: str = "ADVANCED"
    paths: Mapping[str, str] = field(default_factory=dict)
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    environment: str | None = None
    pipeline_id: str = ""
    layers: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def tables_dir(self) -> Path:
        return self.storage / "tables"

    @property
    def checkpoints_dir(self) -> Path:
        return self.storage / "checkpoints"

    @property
    def events_dir(self) -> Path:
        return self.storage / "system" / "events"

    @property
    def autoloader_dir(self) -> Path:
        return self.storage / "autoloader"


def load_spec(path: str | Path, env: str | None = None, overrides: Mapping[str, Any] | None = None
              ) -> PipelineSpec:
    """Read and validate a YAML spec or a Databricks settings JSON (by extension or content)."""
    path = Path(path)
    source = str(path)
    if not path.exists():
        raise SpecError(source, [Problem("SPEC_NOT_FOUND", f"no such file: {path}")])
    text = path.read_text()
    try:
        raw = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        line = (line + 1) if isinstance(line, int) else getattr(exc, "lineno", None)
        raise SpecError(source, [Problem("SPEC_PARSE_ERROR", str(exc).splitlines()[0], source, line)]) from exc
    if not isinstance(raw, dict):
        raise SpecError(source, [Problem("SPEC_NOT_A_MAPPING", "a spec must be a mapping of settings", source)])
    # Asset-bundle style wrapper: {"resources": {"pipelines": {"key": {...}}}} or {"spec": {...}}
    if isinstance(raw.get("spec"), dict):
        raw = raw["spec"]
    pipelines = (raw.get("resources") or {}).get("pipelines") if isinstance(raw.get("resources"), dict) else None
    if isinstance(pipelines, dict):
        if len(pipelines) != 1:
            raise SpecError(source, [Problem("AMBIGUOUS_BUNDLE", f"the bundle defines {len(pipelines)} pipelines "
                                             f"({', '.join(pipelines)}); pass a file with exactly one", source)])
        raw = next(iter(pipelines.values()))
    default_root = path.parent.parent if path.parent.name == "conf" else path.parent
    return parse_spec(raw, source=source, default_root=default_root.resolve(), env=env, overrides=overrides)


def parse_spec(raw: Mapping[str, Any], *, source: str, default_root: Path, env: str | None = None,
               overrides: Mapping[str, Any] | None = None) -> PipelineSpec:
    problems: list[Problem] = []
    data: dict[str, Any] = copy.deepcopy(dict(raw))
    environments = data.pop("environments", None) or {}
    if env is not None:
        if not isinstance(environments, dict) or env not in environments:
            known = ", ".join(sorted(environments)) if isinstance(environments, dict) else "none"
            problems.append(Problem("UNKNOWN_ENVIRONMENT", f"environment '{env}' is not defined (known: {known})",
                                    source))
        else:
            data = _deep_merge(data, environments[env] or {})
    data = _deep_merge(data, dict(overrides or {}))

    for key in data:
        if key not in DATABRICKS_KEYS | LOCAL_KEYS:
            close = difflib.get_close_matches(key, sorted(DATABRICKS_KEYS | LOCAL_KEYS), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            problems.append(Problem("UNKNOWN_SPEC_KEY", f"unknown setting '{key}'{hint}", source))

    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.append(Problem("MISSING_NAME", "the spec needs a `name` (string)", source))
        name = "pipeline"

    root = Path(str(data.get("root", default_root)))
    if not root.is_absolute():
        root = (default_root / root).resolve()

    libraries = _libraries(data.get("libraries"), source, problems)
    configuration = _string_map(data.get("configuration"), "configuration", source, problems)
    paths = _string_map(data.get("paths"), "paths", source, problems)
    spark_conf = _string_map(data.get("spark_conf"), "spark_conf", source, problems)
    layers = _string_map(data.get("layers"), "layers", source, problems)

    catalog = data.get("catalog")
    schema = data.get("schema") or data.get("target") or "default"
    if data.get("schema") and data.get("target"):
        problems.append(Problem("SCHEMA_AND_TARGET", "set either `schema` (Unity Catalog) or the legacy `target`, "
                                "not both", source))
    for key in ("catalog", "schema", "target", "channel", "edition"):
        if data.get(key) is not None and not isinstance(data.get(key), str):
            problems.append(Problem("INVALID_VALUE", f"`{key}` must be a string", source))
    for key in ("development", "continuous", "photon", "serverless"):
        if data.get(key) is not None and not isinstance(data.get(key), bool):
            problems.append(Problem("INVALID_VALUE", f"`{key}` must be true or false", source))

    storage_raw = data.get("storage")
    storage = root / "runs" / str(name)
    if storage_raw is not None:
        if not isinstance(storage_raw, str):
            problems.append(Problem("INVALID_VALUE", "`storage` must be a path string", source))
        elif storage_raw.startswith(("dbfs:/", "/dbfs/", "s3:", "abfss:", "gs:")):
            from framework.paths import PathMapper

            try:
                mapped = PathMapper.from_spec(paths, root).map(storage_raw)
            except PipelineError:
                mapped = storage_raw
            storage = Path(mapped) if mapped != storage_raw else storage
        else:
            storage = Path(storage_raw)
    if not storage.is_absolute():
        storage = (root / storage).resolve()

    if problems:
        raise SpecError(source, problems)
    pipeline_id = str(data.get("id") or uuid.uuid5(uuid.NAMESPACE_URL, f"medallion/{name}/{storage}"))
    extra = {k: v for k, v in data.items() if k in DATABRICKS_KEYS and k not in _USED}
    return PipelineSpec(
        name=str(name), source=source, root=root, libraries=tuple(libraries), storage=storage,
        configuration=configuration, catalog=catalog, schema=str(schema),
        development=bool(data.get("development", True)), continuous=bool(data.get("continuous", False)),
        channel=str(data.get("channel", "CURRENT")), edition=str(data.get("edition", "ADVANCED")),
        paths=paths, spark_conf=spark_conf, environment=env, pipeline_id=pipeline_id, layers=layers, extra=extra)


_USED = {"id", "name", "libraries", "configuration", "catalog", "schema", "target", "storage", "continuous",
         "development", "channel", "edition"}


def _libraries(value: Any, source: str, problems: list[Problem]) -> list[Library]:
    if value is None:
        problems.append(Problem("NO_LIBRARIES", "the spec needs `libraries` (file, notebook or glob entries)",
                                source))
        return []
    if not isinstance(value, list):
        problems.append(Problem("INVALID_LIBRARIES", "`libraries` must be a list", source))
        return []
    out: list[Library] = []
    for i, entry in enumerate(value):
        if isinstance(entry, dict) and len(entry) == 1:
            kind, body = next(iter(entry.items()))
            if kind in ("file", "notebook") and isinstance(body, dict) and isinstance(body.get("path"), str):
                out.append(Library(kind, body["path"]))
                continue
            if kind in ("file", "notebook") and isinstance(body, str):
                out.append(Library(kind, body))
                continue
            if kind == "glob" and isinstance(body, dict) and isinstance(body.get("include"), str):
                out.append(Library("glob", body["include"]))
                continue
            if kind == "glob" and isinstance(body, str):
                out.append(Library("glob", body))
                continue
        problems.append(Problem(
            "INVALID_LIBRARY",
            f"libraries[{i}] = {entry!r}: expected one of {{file: {{path: ...}}}}, {{notebook: {{path: ...}}}}, "
            "{glob: {include: 'dir/**'}}", source))
    return out


def _string_map(value: Any, what: str, source: str, problems: list[Problem]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(Problem("INVALID_VALUE", f"`{what}` must be a mapping of strings", source))
        return {}
    out = {}
    for key, val in value.items():
        if isinstance(val, (dict, list)):
            problems.append(Problem("INVALID_VALUE", f"`{what}.{key}` must be a string, got {type(val).__name__}",
                                    source))
            continue
        out[str(key)] = "" if val is None else (str(val).lower() if isinstance(val, bool) else str(val))
    return out


def _deep_merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out

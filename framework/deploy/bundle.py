"""Turn a local spec into Databricks pipeline settings and a ``databricks.yml`` Asset Bundle.

The pipeline files are deployed as they are: the output folder is a self-contained bundle (a bundle deploys only
the folder that holds its ``databricks.yml``) with a copy of the libraries, the local modules they import and,
where the code needs it, the ``framework`` package (``framework/deploy/contents.py``); local-only settings (path
mappings, local Spark settings, storage under ``runs/``) are left out, and configuration values keep the
Databricks paths written in the spec (``dbfs:/...``), since those are what the code sees on Databricks.
Each library file becomes a ``file`` library (globs are expanded), which every bundle schema version accepts, or a
``notebook`` library for notebook sources (Python or SQL); ``.sql`` files are libraries like ``.py`` ones.

A spec with a ``trigger`` (:class:`framework.spec.JobTrigger`) also gets a job next to the pipeline: one
``pipeline_task`` started by a file-arrival trigger or a Quartz cron schedule. Continuous pipelines deploy as
``continuous: true`` and need no job.

A pipeline whose code reads ``format("jdbc_incremental")`` also gets the notebook
``framework/deploy/register_sources.py`` as its first library (it installs the ADBC driver and registers the
source) and ``medallion.bundle_root`` in its configuration, so that the notebook can import ``framework``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from framework.deploy.checks import missing_paths, production_problems
from framework.deploy.contents import BundleFile, bundle_files, copy_into, sync_includes
from framework.errors import Problem, SpecError
from framework.loader import resolve_libraries
from framework.notebook import is_notebook_source
from framework.paths import PathMapper
from framework.secret_refs import credentials_in_clear
from framework.sources.options import SOURCE_NAME
from framework.spec import JobTrigger, PipelineSpec
from framework.sql.split import is_sql_notebook

WORKSPACE_ROOT = "${workspace.file_path}"
# Where a production target deploys: one copy per bundle and target, as the CLI's production mode requires.
PROD_ROOT_PATH = "/Workspace/Users/${workspace.current_user.userName}/.bundle/${bundle.name}/${bundle.target}"
# Registers jdbc_incremental in a Databricks pipeline (a notebook library: it %pip-installs the ADBC driver).
REGISTER_NOTEBOOK = "framework/deploy/register_sources.py"


def _resource_key(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", name).lower()


def pipeline_settings(spec: PipelineSpec, *, workspace_root: str = WORKSPACE_ROOT,
                      development: bool | None = None) -> dict[str, Any]:
    """Databricks pipeline settings (the shape of the Pipelines API and of a bundle's pipeline resource)."""
    files = _library_files(spec)
    libraries = _libraries(spec, files, workspace_root)
    configuration = dict(spec.configuration)
    if _reads_database_source(files):
        libraries.insert(0, {"notebook": {"path": f"{workspace_root}/{REGISTER_NOTEBOOK}"}})
        configuration.setdefault("medallion.bundle_root", workspace_root)
    settings: dict[str, Any] = {
        "name": spec.name,
        "libraries": libraries,
        "configuration": configuration,
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


def _reads_database_source(files: list[tuple[Path, str]]) -> bool:
    """Whether the code reads ``jdbc_incremental`` (and so gets the notebook that registers it)."""
    return any(SOURCE_NAME in text for _, text in files)


def _library_files(spec: PipelineSpec) -> list[tuple[Path, str]]:
    """Every resolved library file of ``spec`` with its text."""
    files = resolve_libraries(spec, PathMapper.from_spec(spec.paths, spec.root))
    return [(path, path.read_text(encoding="utf-8", errors="replace")) for path in files]


def _libraries(spec: PipelineSpec, files: list[tuple[Path, str]], workspace_root: str) -> list[dict[str, Any]]:
    """One ``file`` or ``notebook`` library per resolved file, by its path under the project root (which the
    bundle syncs to ``workspace_root``)."""
    root = spec.root.resolve()
    outside = [path for path, _ in files if not path.resolve().is_relative_to(root)]
    if outside:
        raise SpecError(spec.source, [Problem(
            "LIBRARY_OUTSIDE_ROOT", f"library file {path} lies outside the project root {root}, which is what "
            "the bundle syncs to the workspace; move it under the root, or set `root:` in the spec to a folder "
            "that holds every library", spec.source) for path in outside])
    libraries = []
    for path, text in files:
        relative = path.resolve().relative_to(root).as_posix()
        kind = "notebook" if is_notebook_source(text) or is_sql_notebook(text) else "file"
        libraries.append({kind: {"path": f"{workspace_root}/{relative}"}})
    return libraries


def bundle_contents(spec: PipelineSpec) -> list[BundleFile]:
    """The files and folders the spec's bundle carries (see ``framework/deploy/contents.py``)."""
    files = _library_files(spec)
    _libraries(spec, files, WORKSPACE_ROOT)  # refuses libraries outside the root, naming each
    return bundle_files(spec.root, files, needs_framework=_reads_database_source(files))


def bundle_config(spec: PipelineSpec, prod_spec: PipelineSpec | None = None,
                  contents: list[BundleFile] | None = None) -> dict[str, Any]:
    """A ``databricks.yml`` with the pipeline as a resource and ``dev`` (default) / ``prod`` targets.

    The prod target always deploys with ``development: false`` and its own ``workspace.root_path``, which the
    CLI's production mode requires; ``prod_spec`` (the spec's prod environment) adds its settings.
    """
    key = _resource_key(spec.name)
    config: dict[str, Any] = {
        "bundle": {"name": key},
        "sync": {"include": sync_includes(bundle_contents(spec) if contents is None else contents)},
        "resources": {"pipelines": {key: pipeline_settings(spec, development=True)}},
        "targets": {
            "dev": {"mode": "development", "default": True},
            "prod": {"mode": "production", "workspace": {"root_path": PROD_ROOT_PATH},
                     "resources": {"pipelines": {key: {"development": False}}}},
        },
    }
    if spec.trigger is not None:
        config["resources"]["jobs"] = {f"{key}_job": job_settings(spec, spec.trigger)}
    if prod_spec is not None:
        prod = pipeline_settings(prod_spec, development=False)
        config["targets"]["prod"]["resources"]["pipelines"][key].update({
            k: v for k, v in prod.items() if k in ("configuration", "target", "catalog")})
        prod_job = _prod_job(spec, prod_spec)
        if prod_job is not None:
            config["targets"]["prod"]["resources"]["jobs"] = {f"{key}_job": prod_job}
    return config


def job_settings(spec: PipelineSpec, trigger: JobTrigger) -> dict[str, Any]:
    """A bundle job resource that runs the pipeline (a ``pipeline_task`` on the bundle's pipeline) on a
    file-arrival trigger or a schedule.

    One run at a time, queued rather than skipped: files that land during a run start the next one, as with
    ``medallion watch``. Bundles in development mode deploy the trigger paused.
    """
    key = _resource_key(spec.name)
    job: dict[str, Any] = {
        "name": f"{spec.name} ({'file arrival' if trigger.file_arrival else 'schedule'})",
        "max_concurrent_runs": 1,
        "queue": {"enabled": True},
        "tasks": [{"task_key": "update", "pipeline_task": {"pipeline_id": f"${{resources.pipelines.{key}.id}}"}}],
    }
    job.update(_trigger_settings(trigger))
    return job


def _trigger_settings(trigger: JobTrigger) -> dict[str, Any]:
    """A job's ``trigger`` (file arrival) or ``schedule`` (Quartz cron)."""
    if trigger.file_arrival is None:
        return {"schedule": {"quartz_cron_expression": trigger.schedule, "timezone_id": trigger.timezone}}
    arrival: dict[str, Any] = {"url": trigger.file_arrival}
    for name in ("min_time_between_triggers_seconds", "wait_after_last_change_seconds"):
        if getattr(trigger, name) is not None:
            arrival[name] = getattr(trigger, name)
    return {"trigger": {"file_arrival": arrival}}


def _prod_job(spec: PipelineSpec, prod_spec: PipelineSpec) -> dict[str, Any] | None:
    """The ``prod`` target's job settings: the whole job when only production has a trigger, its trigger when it
    differs from the base spec's (of the same kind: target settings are merged over the base job)."""
    base, prod = spec.trigger, prod_spec.trigger
    if prod == base:
        return None
    if prod is None or (base is not None and (base.file_arrival is None) != (prod.file_arrival is None)):
        raise SpecError(prod_spec.source, [Problem(
            "TRIGGER_PER_TARGET", "the prod environment's `trigger` must be of the same kind as the base spec's "
            "(file_arrival or schedule), since a bundle target can only change the job's settings; set the "
            "trigger in each environment instead of the base", prod_spec.source)])
    return job_settings(prod_spec, prod) if base is None else _trigger_settings(prod)


def _refuse_credentials_in_clear(spec: PipelineSpec, prod_spec: PipelineSpec | None) -> None:
    """A bundle never carries a credential in clear (``framework/secret_refs.py``): the configuration keys that
    hold one are named, their values never shown.

    Raises:
        SpecError: ``BUNDLE_SECRET_IN_CLEAR``, one problem per key.
    """
    keys = sorted({key for s in (spec, prod_spec) if s is not None for key in credentials_in_clear(s.configuration)})
    if keys:
        raise SpecError(spec.source, [Problem(
            "BUNDLE_SECRET_IN_CLEAR", f"configuration '{key}' holds a credential in clear, which the bundle would "
            "carry to the workspace: write it as a secret reference, {{secrets/<scope>/<key>}} (Databricks reads "
            "the secret; locally it is read as dbutils.secrets.get reads it), or read it in the pipeline's code "
            "with dbutils.secrets.get", spec.source) for key in keys])


def write_deployment(spec: PipelineSpec, out_dir: Path, prod_spec: PipelineSpec | None = None) -> list[Path]:
    """Write a self-contained bundle folder: ``databricks.yml``, a copy of what the pipeline needs, and
    ``<name>.pipeline.json`` (settings for the Pipelines API / UI JSON editor, for a Git folder of the repository).

    Raises:
        SpecError: ``BUNDLE_INVALID`` when the bundle would not pass ``databricks bundle validate`` (a path its
            resources name is not in the folder, or a production target the CLI refuses);
            ``BUNDLE_SECRET_IN_CLEAR`` when the configuration holds a credential in clear.
    """
    _refuse_credentials_in_clear(spec, prod_spec)
    out_dir.mkdir(parents=True, exist_ok=True)
    contents = bundle_contents(spec)
    copy_into(out_dir, contents)
    config = bundle_config(spec, prod_spec, contents)
    problems = [*(f"{path} is named by the bundle but not in it" for path in missing_paths(config, out_dir)),
                *production_problems(config)]
    if problems:
        raise SpecError(spec.source, [Problem("BUNDLE_INVALID", problem, spec.source) for problem in problems])
    settings_path = out_dir / f"{_resource_key(spec.name)}.pipeline.json"
    settings = pipeline_settings(spec, workspace_root="/Workspace/Repos/<user>/<repo>")
    settings_path.write_text(json.dumps(settings, indent=2) + "\n")
    bundle_path = out_dir / "databricks.yml"
    bundle_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return [settings_path, bundle_path]

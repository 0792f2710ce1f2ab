"""Pipeline specs: a YAML file under ``conf/`` or a Databricks pipeline settings JSON → :class:`PipelineSpec`.

Every problem in a spec is reported at once (:class:`framework.errors.SpecError`). YAML specs may carry
``environments:`` overrides (e.g. ``dev``/``prod``) merged over the base when ``env`` is chosen.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
import reprlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from framework.bundle_input import bundle_pipeline, is_bundle
from framework.errors import PipelineError, Problem, SpecError
from framework.storage.url import ObjectStoreUrl, StoragePath, is_object_store_url, storage_path

LibraryKind = Literal["file", "notebook", "glob"]

# Keys of Databricks pipeline settings (accepted; those the shim does not use are kept in `extra`).
DATABRICKS_KEYS = {
    "id", "name", "libraries", "configuration", "catalog", "schema", "target", "storage", "continuous",
    "development", "channel", "edition", "photon", "serverless", "clusters", "event_log", "notifications",
    "allow_duplicate_names", "budget_policy_id", "root_path", "environment", "tags", "deployment", "filters",
    "trigger", "run_as", "restart_window", "dry_run", "gateway_definition", "ingestion_definition",
    "permissions", "usage_policy_id", "parameters",
}
# Local-only keys (YAML specs; also accepted in JSON).
LOCAL_KEYS = {"paths", "spark_conf", "environments", "root", "description", "layers", "tables"}
# `tables`: tables the pipeline reads from outside it (framework/sources/external.py creates them locally).
FILE_FORMATS = {"delta", "json", "csv", "parquet", "orc", "text", "avro", "xml"}
TABLE_KEYS = {"path", "format", "options", "schema", "url", "dbtable", "query", "user", "password", "driver"}
_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){1,2}$")


@dataclass(frozen=True)
class Library:
    """One entry of the spec's ``libraries``.

    Attributes:
        kind: ``file`` or ``notebook`` (one path) or ``glob`` (a pattern).
        path: The path or pattern as written: relative to the spec's root unless absolute or a Databricks path
            (see :func:`framework.loader.resolve_libraries`).
    """

    kind: LibraryKind
    path: str


@dataclass(frozen=True)
class ExternalTable:
    """One entry of the spec's ``tables``: a table the pipeline reads that it does not define.

    Attributes:
        name: ``schema.table`` (or ``catalog.schema.table``) as pipeline code reads it.
        format: ``delta``, a file format (``json``, ``csv``, ``parquet``, ...) or ``jdbc``.
        path: The local folder of a Delta or file table (Databricks paths mapped through ``paths``).
        options: Reader options (for ``jdbc``: ``url``, ``dbtable`` or ``query``, ``user``, ``password``, ...).
        schema: The columns of a file table as DDL (``id bigint, name string``), when not inferred.
    """

    name: str
    format: str
    path: Path | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    schema: str | None = None


@dataclass(frozen=True)
class JobTrigger:
    """The spec's ``trigger``: what starts the pipeline's updates on Databricks, deployed as a job with a
    ``pipeline_task`` next to the pipeline (``medallion deploy``). Exactly one of ``file_arrival`` and
    ``schedule`` is set.

    Attributes:
        file_arrival: The storage location (``/Volumes/...``, ``s3://...``, ``abfss://...``, ``gs://...``) whose new
            files start an update (``medallion watch`` is the local counterpart).
        schedule: A Quartz cron expression (seconds first, six or seven fields: ``0 0 6 * * ?``).
        timezone: The schedule's Java time zone ID.
        wait_after_last_change_seconds: File arrival: quiet time after the last new file before a run (>= 60).
        min_time_between_triggers_seconds: File arrival: least time between two runs (>= 60).
    """

    file_arrival: str | None = None
    schedule: str | None = None
    timezone: str = "UTC"
    wait_after_last_change_seconds: int | None = None
    min_time_between_triggers_seconds: int | None = None


@dataclass(frozen=True)
class PipelineSpec:
    """A validated pipeline spec. Paths are absolute."""

    name: str
    source: str
    root: Path
    libraries: tuple[Library, ...]
    storage: StoragePath  # a local folder, or an object-store URL (framework/storage/url.py)
    configuration: Mapping[str, str] = field(default_factory=dict)
    catalog: str | None = None
    schema: str = "default"
    legacy_target: bool = False  # the schema came from the legacy `target`: Databricks' legacy publishing mode
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
    tables: tuple[ExternalTable, ...] = ()
    trigger: JobTrigger | None = None
    parameters: Mapping[str, str] = field(default_factory=dict)  # pipeline parameters (Beta): `:name` in SQL

    @property
    def tables_dir(self) -> StoragePath:
        """``<storage>/tables``: one Delta table folder per dataset without a declared ``path``."""
        return self.storage / "tables"

    @property
    def checkpoints_dir(self) -> StoragePath:
        """``<storage>/checkpoints``: streaming checkpoints, one per target and flow."""
        return self.storage / "checkpoints"

    @property
    def events_dir(self) -> StoragePath:
        """``<storage>/system/events``: the event log, a Delta table."""
        return self.storage / "system" / "events"

    @property
    def autoloader_dir(self) -> StoragePath:
        """``<storage>/autoloader``: Auto Loader's default schema locations, one per target and flow."""
        return self.storage / "autoloader"


# An expanded spec larger than this is refused: YAML aliases can make a few hundred bytes expand to billions of
# entries ("billion laughs"), which would hang every later walk over the spec (merging, messages, deployment).
# The largest real specs we know (Databricks settings with cluster policies) have a few hundred nodes.
MAX_SPEC_NODES = 100_000
MAX_SPEC_BYTES = 5 * 1024 * 1024
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlevel, _SHORT.maxdict, _SHORT.maxlist = 3, 3, 3
_SHORT_MAX = 160


def short_repr(value: Any) -> str:
    """``repr(value)`` cut to at most 160 characters, for messages about user input of any size."""
    text = _SHORT.repr(value)
    return text if len(text) <= _SHORT_MAX else text[:_SHORT_MAX - 3] + "..."


def load_spec(path: str | Path, env: str | None = None, overrides: Mapping[str, Any] | None = None,
              *, pipeline: str | None = None, target: str | None = None) -> PipelineSpec:
    """Read and validate a YAML spec or a Databricks settings JSON (by extension or content).

    Args:
        path: The spec file.
        env: An ``environments`` entry merged over the base settings.
        overrides: Settings merged over everything else (e.g. the CLI's ``--storage``).
        pipeline: For an Asset Bundle (``databricks.yml``, ``resources/*.yml``): the key of the pipeline to run.
        target: For an Asset Bundle: the target whose variables and settings apply (default: its default).

    Returns:
        The validated spec. Its libraries are not looked up here (see ``framework.loader.resolve_libraries``).

    Raises:
        SpecError: The file is missing, unreadable, not UTF-8, too large once expanded, or invalid; every
            problem of a readable spec at once.
    """
    path = Path(path)
    source = str(path)
    raw = _parse_text(_read_text(path, source), path, source)
    default_root = path.parent.parent if path.parent.name == "conf" else path.parent
    if is_bundle(raw):  # framework/bundle_input.py: include, variables, targets, the pipeline by its key
        raw, folder = bundle_pipeline(raw, path, pipeline=pipeline, target=target)
        default_root = default_root if folder == path.parent else folder
    elif pipeline is not None or target is not None:
        raise SpecError(source, [Problem("NOT_A_BUNDLE", f"{path} is one pipeline's settings, not an Asset "
                                         "Bundle: --pipeline and --target apply to bundles only", source)])
    return parse_spec(_unwrap(raw, source), source=source, default_root=default_root.resolve(), env=env,
                      overrides=overrides)


def _read_text(path: Path, source: str) -> str:
    def fail(code: str, message: str, line: int | None = None) -> SpecError:
        return SpecError(source, [Problem(code, message, source, line)])

    if not path.exists():
        raise fail("SPEC_NOT_FOUND", f"no such file: {path}")
    if path.is_dir():
        raise fail("SPEC_IS_A_DIRECTORY", f"{path} is a directory; pass the spec file inside it "
                   "(e.g. conf/<pipeline>.yaml)")
    try:
        if path.stat().st_size > MAX_SPEC_BYTES:
            raise fail("SPEC_TOO_LARGE", f"the file has {path.stat().st_size} bytes; a spec is at most "
                       f"{MAX_SPEC_BYTES} bytes")
        data = path.read_bytes()
    except OSError as exc:
        raise fail("SPEC_UNREADABLE", f"cannot read {path}: {exc.strerror or type(exc).__name__}") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise fail("SPEC_NOT_UTF8", f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                   "save the spec as UTF-8", line) from exc


def _parse_text(text: str, path: Path, source: str) -> Any:
    try:
        if path.suffix == ".json":
            return json.loads(text)
        return yaml.load(text, Loader=_BoundedLoader)  # a SafeLoader subclass
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        line = (line + 1) if isinstance(line, int) else getattr(exc, "lineno", None)
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SpecError(source, [Problem("SPEC_PARSE_ERROR", first[:300], source, line)]) from exc
    except _SpecTooLarge as exc:
        raise SpecError(source, [Problem("SPEC_TOO_LARGE", str(exc), source)]) from None
    except RecursionError:
        raise SpecError(source, [Problem("SPEC_TOO_LARGE", "the spec is nested too deeply", source)]) from None


class _SpecTooLarge(Exception):
    pass


class _BoundedLoader(yaml.SafeLoader):
    """A SafeLoader that refuses documents whose aliases expand to more than ``MAX_SPEC_NODES`` nodes (or that
    refer to themselves), before any Python object is built."""

    def compose_document(self) -> Any:
        node = super().compose_document()
        if node is not None:
            _expanded_size(node, {}, set())
        return node


def _expanded_size(node: yaml.Node, sizes: dict[int, int], open_nodes: set[int]) -> int:
    """Nodes in the tree ``node`` stands for once every alias is copied out (memoised, so linear in the
    composed graph)."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in open_nodes:
        raise _SpecTooLarge("an alias refers to the node that contains it (a recursive spec)")
    open_nodes.add(key)
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(child, sizes, open_nodes) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(_expanded_size(k, sizes, open_nodes) + _expanded_size(v, sizes, open_nodes)
                    for k, v in node.value)
    open_nodes.discard(key)
    if size > MAX_SPEC_NODES:
        raise _SpecTooLarge(f"the spec expands to more than {MAX_SPEC_NODES} entries (YAML aliases?); "
                            "write the settings out instead of repeating anchors")
    sizes[key] = size
    return size


def _unwrap(raw: Any, source: str) -> dict[str, Any]:
    """The pipeline settings inside ``raw``: itself, or an asset bundle's ``{"resources": {"pipelines":
    {"key": {...}}}}``, or a ``{"spec": {...}}`` wrapper."""
    if not isinstance(raw, dict):
        raise SpecError(source, [Problem("SPEC_NOT_A_MAPPING", "a spec must be a mapping of settings", source)])
    if isinstance(raw.get("spec"), dict):
        raw = raw["spec"]
    pipelines = (raw.get("resources") or {}).get("pipelines") if isinstance(raw.get("resources"), dict) else None
    if isinstance(pipelines, dict):
        if len(pipelines) != 1:
            names = ", ".join(short_repr(str(k)) for k in list(pipelines)[:5])
            raise SpecError(source, [Problem("AMBIGUOUS_BUNDLE", f"the bundle defines {len(pipelines)} pipelines "
                                             f"({names}); pass a file with exactly one", source)])
        raw = next(iter(pipelines.values()))
        if not isinstance(raw, dict):
            raise SpecError(source, [Problem("SPEC_NOT_A_MAPPING", "the bundle's pipeline must be a mapping of "
                                             "settings", source)])
    return raw


def parse_spec(raw: Mapping[str, Any], *, source: str, default_root: Path, env: str | None = None,
               overrides: Mapping[str, Any] | None = None) -> PipelineSpec:
    """Validate pipeline settings (already read from a file) into a :class:`PipelineSpec`.

    Args:
        raw: The settings mapping.
        source: Where the settings came from (named in every problem).
        default_root: The project root when the settings give no ``root``.
        env: An ``environments`` entry merged over the base settings.
        overrides: Settings merged over everything else.

    Raises:
        SpecError: Every problem found, at once.
    """
    problems: list[Problem] = []
    data = _merged_settings(raw, env, overrides, source, problems)
    _check_keys_and_types(data, source, problems)
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.append(Problem("MISSING_NAME", "the spec needs a `name` (string)", source))
        name = "pipeline"
    root = Path(str(data.get("root", default_root)))
    if not root.is_absolute():
        root = (default_root / root).resolve()
    libraries = _libraries(data.get("libraries"), source, problems)
    maps = {what: _string_map(data.get(what), what, source, problems)
            for what in ("configuration", "paths", "spark_conf", "layers")}
    storage = _storage(data.get("storage"), root, str(name), maps["paths"], source, problems)
    tables = external_tables(data.get("tables"), root, maps["paths"], source, problems)
    trigger = job_trigger(data.get("trigger"), data.get("continuous") is True, source, problems)
    parameters = pipeline_parameters(data.get("parameters"), source, problems)
    if problems:
        raise SpecError(source, problems)
    pipeline_id = str(data.get("id") or uuid.uuid5(uuid.NAMESPACE_URL, f"medallion/{name}/{storage}"))
    extra = {k: v for k, v in data.items() if k in DATABRICKS_KEYS and k not in _USED
             and not (k == "trigger" and not is_pipeline_trigger(v))}
    return PipelineSpec(
        name=str(name), source=source, root=root, libraries=tuple(libraries), storage=storage,
        configuration=maps["configuration"], catalog=data.get("catalog"),
        schema=str(data.get("schema") or data.get("target") or "default"), legacy_target=bool(data.get("target")),
        development=bool(data.get("development", True)), continuous=bool(data.get("continuous", False)),
        channel=str(data.get("channel", "CURRENT")), edition=str(data.get("edition", "ADVANCED")),
        paths=maps["paths"], spark_conf=maps["spark_conf"], environment=env, pipeline_id=pipeline_id,
        layers=maps["layers"], extra=extra, tables=tuple(tables), trigger=trigger, parameters=parameters)


_PARAMETER_KEY = re.compile(r"^[A-Za-z0-9_.-]+$")


def pipeline_parameters(value: Any, source: str, problems: list[Problem]) -> dict[str, str]:
    """The spec's ``parameters`` (Databricks' pipeline parameters, Beta): string values by key, given as a
    mapping or as a list of ``{name, default}`` (or ``{name, value}``) entries. Keys hold letters, digits,
    ``_``, ``-`` and ``.`` only, as on Databricks."""
    if isinstance(value, list):
        entries: dict[Any, Any] = {}
        for entry in value:
            if not isinstance(entry, dict) or "name" not in entry:
                problems.append(Problem("INVALID_VALUE", "`parameters` entries need a `name` (and a `default`)",
                                        source))
                continue
            entries[entry["name"]] = entry.get("default", entry.get("value"))
        value = entries
    out = _string_map(value, "parameters", source, problems)
    for key in out:
        if not _PARAMETER_KEY.match(key):
            problems.append(Problem("INVALID_VALUE", f"parameter key {short_repr(key)}: use letters, digits, "
                                    "'_', '-' and '.' only", source))
    return out


def external_tables(value: Any, root: Path, paths: Mapping[str, str], source: str,
                    problems: list[Problem]) -> list[ExternalTable]:
    """The spec's ``tables``: ``{schema.table: {path: ..., format: ...}}`` or ``{schema.table: {format: jdbc,
    url: ..., dbtable: ...}}``; every mistake is added to ``problems``."""
    if value is None:
        return []
    if not isinstance(value, dict):
        problems.append(Problem("INVALID_TABLES", "`tables` must map table names (schema.table) to their "
                                "source, e.g. {cdc_data.users: {path: data/users, format: json}}", source))
        return []
    out = []
    for name, body in value.items():
        where = f"tables.{short_repr(name) if not isinstance(name, str) else name[:100]}"
        if not isinstance(name, str) or not _TABLE_NAME.match(name):
            problems.append(Problem("INVALID_TABLE_NAME", f"{where}: a table name is schema.table or "
                                    "catalog.schema.table (letters, digits, underscores)", source))
            continue
        if not isinstance(body, dict):
            problems.append(Problem("INVALID_TABLE", f"{where} must be a mapping such as {{path: data/users, "
                                    "format: json}} or {format: jdbc, url: ..., dbtable: ...}", source))
            continue
        table = _external_table(name, body, where, root, paths, source, problems)
        if table is not None:
            out.append(table)
    return out


def _external_table(name: str, body: Mapping[str, Any], where: str, root: Path, paths: Mapping[str, str],
                    source: str, problems: list[Problem]) -> ExternalTable | None:
    found = len(problems)
    for key in body:
        if key not in TABLE_KEYS:
            close = difflib.get_close_matches(str(key), sorted(TABLE_KEYS), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f" (known: {', '.join(sorted(TABLE_KEYS))})"
            problems.append(Problem("UNKNOWN_TABLE_KEY", f"{where}: unknown key {short_repr(key)}{hint}", source))
    fmt = str(body.get("format") or ("jdbc" if body.get("url") else "delta")).lower()
    options = _string_map(body.get("options"), f"{where}.options", source, problems)
    if fmt == "jdbc":
        _jdbc_table(body, where, source, problems, options)
    elif fmt in FILE_FORMATS:
        if not isinstance(body.get("path"), str) or not body["path"].strip():
            problems.append(Problem("MISSING_TABLE_PATH", f"{where}: a {fmt} table needs `path` (a folder)", source))
        for key in ("url", "dbtable", "query", "user", "password", "driver"):
            if key in body:
                problems.append(Problem("INVALID_TABLE", f"{where}: `{key}` is for JDBC tables (format: jdbc)",
                                        source))
    else:
        problems.append(Problem("UNKNOWN_TABLE_FORMAT", f"{where}: format '{fmt[:50]}' is not one of "
                                f"{', '.join(sorted(FILE_FORMATS | {'jdbc'}))}", source))
    schema = body.get("schema")
    if schema is not None and not isinstance(schema, str):
        problems.append(Problem("INVALID_TABLE", f"{where}: `schema` must be DDL text such as 'id bigint, "
                                "name string'", source))
    path = None
    if fmt != "jdbc" and isinstance(body.get("path"), str):
        path = _table_path(body["path"], root, paths, where, source, problems)
    if len(problems) > found:
        return None
    return ExternalTable(name, fmt, path, options, schema)


def _jdbc_table(body: Mapping[str, Any], where: str, source: str, problems: list[Problem],
                options: dict[str, str]) -> None:
    """Check a JDBC table's keys and move them into its reader ``options``."""
    if not isinstance(body.get("url"), str) or not str(body["url"]).startswith("jdbc:"):
        problems.append(Problem("MISSING_TABLE_URL", f"{where}: a JDBC table needs `url` (jdbc:postgresql://host:"
                                "port/database)", source))
    if ("dbtable" in body) == ("query" in body):
        problems.append(Problem("INVALID_TABLE", f"{where}: give exactly one of `dbtable` and `query`", source))
    if "path" in body:
        problems.append(Problem("INVALID_TABLE", f"{where}: a JDBC table has no `path`", source))
    for key in ("url", "dbtable", "query", "user", "password", "driver"):
        if body.get(key) is not None:
            options[key] = str(body[key])


def _table_path(value: str, root: Path, paths: Mapping[str, str], where: str, source: str,
                problems: list[Problem]) -> Path:
    if value.startswith(("dbfs:/", "/dbfs/", "s3:", "abfss:", "gs:", "/Volumes/")):
        from framework.paths import PathMapper

        try:
            value = PathMapper.from_spec(paths, root).map(value)
        except PipelineError as exc:
            problems.append(Problem("UNMAPPED_TABLE_PATH", f"{where}: {exc.message}", source))
    path = Path(value)
    return path if path.is_absolute() else (root / path).resolve()


# `trigger` of Databricks pipeline settings (deprecated there, kept as it is) versus the spec's job trigger.
PIPELINE_TRIGGER_KEYS = {"cron", "manual"}
JOB_TRIGGER_KEYS = {"file_arrival", "schedule", "timezone", "wait_after_last_change_seconds",
                    "min_time_between_triggers_seconds"}
_TRIGGER_URL_PREFIXES = ("/Volumes/", "s3://", "s3a://", "abfss://", "gs://", "${")
_JAVA_ZONE_OFFSET = re.compile(r"^(GMT|UTC)([+-]\d{1,2}(:?\d{2})?)?$")


def is_pipeline_trigger(value: Any) -> bool:
    """Whether a ``trigger`` value is Databricks' pipeline setting (``{cron: ...}`` or ``{manual: {}}``)."""
    return isinstance(value, dict) and bool(value) and set(value) <= PIPELINE_TRIGGER_KEYS


def job_trigger(value: Any, continuous: bool, source: str, problems: list[Problem]) -> JobTrigger | None:
    """The spec's ``trigger``: ``{file_arrival: <location>}`` (optionally ``wait_after_last_change_seconds``,
    ``min_time_between_triggers_seconds``) or ``{schedule: <Quartz cron>, timezone: <zone>}``; every mistake is
    added to ``problems``. Databricks' own pipeline ``trigger`` (``cron``/``manual``) is no job trigger: None."""
    if value is None or is_pipeline_trigger(value):
        return None
    if not isinstance(value, dict):
        problems.append(Problem("INVALID_TRIGGER", "`trigger` must be a mapping: {file_arrival: /Volumes/...} or "
                                "{schedule: '0 0 6 * * ?', timezone: UTC}", source))
        return None
    found = len(problems)
    for key in value:
        if key in PIPELINE_TRIGGER_KEYS:
            problems.append(Problem("INVALID_TRIGGER", f"trigger.{key} is Databricks' (deprecated) pipeline "
                                    "trigger; do not mix it with file_arrival/schedule", source))
        elif key not in JOB_TRIGGER_KEYS:
            close = difflib.get_close_matches(str(key), sorted(JOB_TRIGGER_KEYS), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else f" (known: {', '.join(sorted(JOB_TRIGGER_KEYS))})"
            problems.append(Problem("UNKNOWN_TRIGGER_KEY", f"trigger: unknown key {short_repr(key)}{hint}", source))
    url, cron = value.get("file_arrival"), value.get("schedule")
    if (url is None) == (cron is None):
        problems.append(Problem("INVALID_TRIGGER", "trigger: give exactly one of `file_arrival` (a location) and "
                                "`schedule` (a Quartz cron expression)", source))
    if url is not None:
        _check_trigger_url(url, source, problems)
    if cron is not None:
        problems.extend(Problem("INVALID_SCHEDULE", f"trigger.schedule {short_repr(cron)}: {message}", source)
                        for message in quartz_cron_problems(cron))
    timezone = value.get("timezone", "UTC")
    _check_trigger_details(value, timezone, url is not None, source, problems)
    if continuous:
        problems.append(Problem("TRIGGER_WITH_CONTINUOUS", "a continuous pipeline runs all the time and a job "
                                "cannot start it: remove `trigger` or set `continuous: false`", source))
    if len(problems) > found:
        return None
    return JobTrigger(file_arrival=url, schedule=cron, timezone=timezone,
                      wait_after_last_change_seconds=value.get("wait_after_last_change_seconds"),
                      min_time_between_triggers_seconds=value.get("min_time_between_triggers_seconds"))


def _check_trigger_url(url: Any, source: str, problems: list[Problem]) -> None:
    if not isinstance(url, str) or not url.startswith(_TRIGGER_URL_PREFIXES):
        problems.append(Problem("INVALID_TRIGGER_URL", f"trigger.file_arrival {short_repr(url)}: a file arrival "
                                "trigger watches a Unity Catalog volume or external location: /Volumes/<catalog>/"
                                "<schema>/<volume>/..., s3://..., abfss://... or gs://... (not dbfs:/ or a local "
                                "path; `medallion watch` is the local counterpart)", source))


def _check_trigger_details(value: Mapping[str, Any], timezone: Any, file_arrival: bool, source: str,
                           problems: list[Problem]) -> None:
    """The time zone (schedules) and the waiting times (file arrival)."""
    if "timezone" in value and "schedule" not in value:
        problems.append(Problem("INVALID_TRIGGER", "trigger.timezone is for a `schedule`", source))
    elif not isinstance(timezone, str) or not (timezone in _zones() or _JAVA_ZONE_OFFSET.match(timezone)):
        problems.append(Problem("UNKNOWN_TIMEZONE", f"trigger.timezone {short_repr(timezone)} is not a time zone "
                                "ID (e.g. UTC, Europe/Amsterdam, America/New_York)", source))
    for key in ("wait_after_last_change_seconds", "min_time_between_triggers_seconds"):
        if key not in value:
            continue
        seconds = value[key]
        if not file_arrival:
            problems.append(Problem("INVALID_TRIGGER", f"trigger.{key} is for a `file_arrival` trigger", source))
        elif isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 60:
            problems.append(Problem("INVALID_TRIGGER", f"trigger.{key} must be a whole number of seconds, at "
                                    f"least 60 (Databricks' minimum), got {short_repr(seconds)}", source))


def _zones() -> set[str]:
    import zoneinfo

    return set(zoneinfo.available_timezones()) | {"UTC", "GMT"}


# Quartz cron fields: name, smallest and largest number, names allowed instead of numbers.
_QUARTZ_FIELDS = (("seconds", 0, 59, ()), ("minutes", 0, 59, ()), ("hours", 0, 23, ()),
                  ("day of month", 1, 31, ()),
                  ("month", 1, 12, ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV",
                                    "DEC")),
                  ("day of week", 1, 7, ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")),
                  ("year", 1970, 2099, ()))
_QUARTZ_TOKEN = re.compile(r"^(\*|\?|L|LW|[0-9A-Z]+L?W?(#[1-5])?)$")


def quartz_cron_problems(expression: Any) -> list[str]:
    """What is wrong with a Quartz cron expression (Databricks job schedules), empty when it is valid.

    Quartz has a seconds field first (six fields, a seventh for the year), and one of day of month and day of week
    must be ``?``; a five-field Unix cron line is the usual mistake.
    """
    if not isinstance(expression, str):
        return ["must be a string such as '0 0 6 * * ?' (06:00 every day)"]
    fields = expression.upper().split()
    if len(fields) not in (6, 7):
        hint = f" ('0 {expression.strip()}' with one of day of month / day of week '?')" if len(fields) == 5 else ""
        return [f"a Quartz cron expression has 6 or 7 fields, seconds first{hint}; got {len(fields)}"]
    found = [message for text, spec in zip(fields, _QUARTZ_FIELDS, strict=False)
             for message in _quartz_field_problems(text, *spec)]
    if (fields[3] == "?") == (fields[5] == "?"):
        found.append("exactly one of day of month (4th field) and day of week (6th field) must be '?'")
    return found


def _quartz_field_problems(text: str, name: str, low: int, high: int, names: tuple[str, ...]) -> list[str]:
    out = []
    for part in text.split(","):
        base, _, step = part.partition("/")
        if step and not (step.isdigit() and int(step) > 0):
            out.append(f"{name}: step '/{step}' must be a positive number")
        if base in ("*", "?"):
            if base == "?" and name not in ("day of month", "day of week"):
                out.append(f"{name}: '?' is only for day of month or day of week")
            continue
        for token in base.split("-"):
            number = token.rstrip("LW").split("#")[0]
            if not _QUARTZ_TOKEN.match(token) or not (number == "" or number.isdigit() or number in names):
                out.append(f"{name}: '{token}' is not a value of this field")
            elif number.isdigit() and not low <= int(number) <= high:
                out.append(f"{name}: {number} is outside {low}-{high}")
    return out


def _merged_settings(raw: Mapping[str, Any], env: str | None, overrides: Mapping[str, Any] | None, source: str,
                     problems: list[Problem]) -> dict[str, Any]:
    """The base settings with the chosen environment, then ``overrides``, merged over them."""
    data: dict[str, Any] = copy.deepcopy(dict(raw))
    environments = data.pop("environments", None) or {}
    if env is not None:
        if not isinstance(environments, dict) or env not in environments:
            known = ", ".join(sorted(map(str, environments))) if isinstance(environments, dict) else "none"
            problems.append(Problem("UNKNOWN_ENVIRONMENT", f"environment '{env}' is not defined (known: "
                                    f"{known[:300]})", source))
        elif isinstance(environments[env] or {}, Mapping):
            data = _deep_merge(data, environments[env] or {})
        else:
            problems.append(Problem("INVALID_VALUE", f"`environments.{env}` must be a mapping of settings",
                                    source))
    return _deep_merge(data, dict(overrides or {}))


def _check_keys_and_types(data: Mapping[str, Any], source: str, problems: list[Problem]) -> None:
    known = sorted(DATABRICKS_KEYS | LOCAL_KEYS)
    for key in data:
        if key not in DATABRICKS_KEYS | LOCAL_KEYS:
            close = difflib.get_close_matches(key, known, n=1) if isinstance(key, str) and len(key) < 100 else []
            hint = f"; did you mean '{close[0]}'?" if close else ""
            problems.append(Problem("UNKNOWN_SPEC_KEY", f"unknown setting {short_repr(key)}{hint}", source))
    if data.get("schema") and data.get("target"):
        problems.append(Problem("SCHEMA_AND_TARGET", "set either `schema` (Unity Catalog) or the legacy `target`, "
                                "not both", source))
    for key in ("catalog", "schema", "target", "channel", "edition"):
        if data.get(key) is not None and not isinstance(data.get(key), str):
            problems.append(Problem("INVALID_VALUE", f"`{key}` must be a string", source))
    for key in ("development", "continuous", "photon", "serverless"):
        if data.get(key) is not None and not isinstance(data.get(key), bool):
            problems.append(Problem("INVALID_VALUE", f"`{key}` must be true or false", source))


def _storage(value: Any, root: Path, name: str, paths: Mapping[str, str], source: str,
             problems: list[Problem]) -> StoragePath:
    """The storage root: ``<root>/runs/<name>`` by default, a mapped Databricks path, a local path, or an
    object-store URL (``s3a://bucket/prefix``, as given or as a mapping's target)."""
    storage: StoragePath = root / "runs" / name
    if value is not None:
        if not isinstance(value, str):
            problems.append(Problem("INVALID_VALUE", "`storage` must be a path string", source))
        elif is_object_store_url(value) and not value.startswith(("s3:", "abfss:", "gs:")):
            storage = ObjectStoreUrl(value)
        elif value.startswith(("dbfs:/", "/dbfs/", "s3:", "abfss:", "gs:")):
            from framework.paths import PathMapper

            try:
                mapped = PathMapper.from_spec(paths, root).map(value)
            except PipelineError:
                mapped = value
            storage = storage_path(mapped) if mapped != value else storage
        else:
            storage = Path(value)
    if isinstance(storage, Path) and not storage.is_absolute():
        storage = (root / storage).resolve()
    return storage


_USED = {"id", "name", "libraries", "configuration", "catalog", "schema", "target", "storage", "continuous",
         "development", "channel", "edition", "parameters"}


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
            f"libraries[{i}] = {short_repr(entry)}: expected one of {{file: {{path: ...}}}}, "
            "{notebook: {path: ...}}, {glob: {include: 'dir/**'}}", source))
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
            problems.append(Problem("INVALID_VALUE", f"`{what}.{str(key)[:100]}` must be a string, got "
                                    f"{type(val).__name__}", source))
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

"""Local Spark settings (``conf/spark.yaml``), shared by the runner, the tests and the benchmarks."""

from __future__ import annotations

import copy
import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from framework.errors import EnvironmentSetupError, Problem

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# The keys conf/spark.yaml may hold, by section (None: any key, e.g. Spark settings under `spark_conf`).
KNOWN_KEYS: dict[str, frozenset[str] | None] = {
    "jars": frozenset({"cache_dir", "maven"}),
    "spark_conf": None,
    "driver_java_options": None,
    "one_command_java_options": None,
    "small_updates": frozenset({"max_input_bytes", "max_input_rows", "spark_conf", "driver_java_options"}),
}
# Top-level keys holding one value: `master`, the Spark master URL a session is built with, and
# `class_data_sharing`, whether the driver JVM maps the archive `make setup` writes (framework/runner/cds.py).
SCALAR_KEYS = frozenset({"master", "class_data_sharing"})
# The framework's own jar, built from jvm/src at set-up: <jars cache_dir>/medallion-jvm-<hash of the sources>.jar
FRAMEWORK_JAR_PREFIX = "medallion-jvm-"
# Set by `medallion run/validate --master URL`; wins over `master` in conf/spark.yaml.
MASTER_ENV = "MEDALLION_SPARK_MASTER"


def project_root() -> Path:
    """The repository root: ``$MEDALLION_HOME`` if set, else the folder holding the ``framework`` package."""
    return Path(os.environ.get("MEDALLION_HOME", PROJECT_ROOT))


@dataclass(frozen=True)
class SmallUpdates:
    """``small_updates`` of ``conf/spark.yaml``: the input-size limit and the Spark settings below it."""

    max_input_bytes: int = 0  # 0: never
    spark_conf: dict[str, str] = field(default_factory=dict)
    # JVM options of a process that starts the JVM for one small update (framework/runner/sizing.py)
    java_options: tuple[str, ...] = ()
    max_input_rows: int = 0  # rows of the Delta tables among the inputs, by their logs (0: not counted)


@dataclass(frozen=True)
class LocalSparkSettings:
    """What a local SparkSession is built from."""

    spark_conf: dict[str, str] = field(default_factory=dict)
    jar_coordinates: tuple[str, ...] = ()
    jar_cache_dir: Path = Path(".cache/jars")
    small_updates: SmallUpdates = field(default_factory=SmallUpdates)
    driver_java_options: tuple[str, ...] = ()
    # added to a JVM started for one command (framework/runner/session.py, plan_one_command)
    one_command_java_options: tuple[str, ...] = ()
    master: str | None = None  # None: spark_conf's spark.master (or spark-submit's --master)
    class_data_sharing: bool = True

    def jar_paths(self) -> list[Path]:
        """Local paths of the configured Maven jars (``group:artifact:version`` → ``artifact-version.jar``)."""
        paths = []
        for coordinate in self.jar_coordinates:
            _group, artifact, version = coordinate.split(":")
            paths.append(self.jar_cache_dir / f"{artifact}-{version}.jar")
        return paths


def load_local_settings(path: Path | None = None) -> LocalSparkSettings:
    """Read ``conf/spark.yaml`` (or ``path``) into :class:`LocalSparkSettings`."""
    root = project_root()
    path = path or root / "conf" / "spark.yaml"
    if not path.exists():
        raise EnvironmentSetupError(f"local Spark settings not found at {path}; restore conf/spark.yaml")
    raw = _parsed_yaml(path)
    check_keys(raw, path)
    jars = raw.get("jars") or {}
    cache = Path(os.environ.get("MEDALLION_JARS_DIR", jars.get("cache_dir", ".cache/jars")))
    if not cache.is_absolute():
        cache = root / cache
    conf = {str(k): str(v) for k, v in (raw.get("spark_conf") or {}).items()}
    small = raw.get("small_updates") or {}
    try:
        small_updates = SmallUpdates(int(small.get("max_input_bytes", 0)),
                                     {str(k): str(v) for k, v in (small.get("spark_conf") or {}).items()},
                                     _java_options(small, path, "small_updates.driver_java_options"),
                                     int(small.get("max_input_rows", 0)))
    except (TypeError, ValueError, AttributeError) as exc:
        raise EnvironmentSetupError(f"{path}: small_updates must hold max_input_bytes (a number of bytes), "
                                    "max_input_rows (a number of rows), spark_conf (a mapping) and "
                                    f"driver_java_options (a list): {exc}") from None
    return LocalSparkSettings(spark_conf=conf, jar_coordinates=tuple(jars.get("maven") or ()),
                              jar_cache_dir=cache, small_updates=small_updates,
                              driver_java_options=_java_options(raw, path, "driver_java_options"),
                              one_command_java_options=_java_options(raw, path, "one_command_java_options"),
                              master=_master(raw, path),
                              class_data_sharing=_flag(raw, "class_data_sharing", path, default=True))


_PARSED: dict[tuple[str, int, int], dict[str, Any]] = {}


def _parsed_yaml(path: Path) -> dict[str, Any]:
    """``path`` parsed, once per version of the file (its modification time and size): an update reads the
    settings twice, and a warm session once per update, at 25 ms a parse. A copy: callers may not change it."""
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    if key not in _PARSED:
        _PARSED.clear()
        _PARSED[key] = yaml.safe_load(path.read_text()) or {}
    return copy.deepcopy(_PARSED[key])


def _java_options(raw: Mapping[str, Any], path: Path, key: str) -> tuple[str, ...]:
    value = raw.get(key.rsplit(".", 1)[-1]) or []
    if not isinstance(value, list) or not all(isinstance(o, str) for o in value):
        raise EnvironmentSetupError(f"{path}: {key} must be a list of JVM options (strings), got {value!r}")
    return tuple(value)


def _flag(raw: Mapping[str, Any], key: str, path: Path, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise EnvironmentSetupError(f"{key} must be true or false, got {value!r}", code="INVALID_SPARK_SETTINGS",
                                    file=str(path))
    return value


def _master(raw: Mapping[str, Any], path: Path) -> str | None:
    """The master URL: ``$MEDALLION_SPARK_MASTER`` (``--master``), else ``master`` of the file, else None."""
    value = os.environ.get(MASTER_ENV) or raw.get("master")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value.strip()):
        raise EnvironmentSetupError(f"master must be a Spark master URL such as spark://host:7077, "
                                    f"local[2], yarn or k8s://https://host:443, got {value!r}",
                                    code="INVALID_SPARK_SETTINGS", file=str(path))
    return value.strip()


def is_local_master(master: str) -> bool:
    """Whether ``master`` runs everything in the driver's JVM (``local``, ``local[N]``, ``local[N,F]``...);
    ``local-cluster[...]`` starts executor JVMs, as a cluster does."""
    return master == "local" or master.startswith("local[")


def unknown_keys(raw: object, source: str) -> list[Problem]:
    """A problem for every key of the settings file (top level and known sections) that nothing reads.

    Args:
        raw: the parsed YAML document.
        source: the file, named in each problem.

    Returns:
        The problems (code ``UNKNOWN_SETTINGS_KEY``), in file order, each with the closest known key if any.
    """
    if not isinstance(raw, Mapping):
        return [Problem("INVALID_SETTINGS", f"the file must hold a mapping of settings, got {type(raw).__name__}",
                        source)]
    top = {k: v for k, v in raw.items() if k not in SCALAR_KEYS}
    problems = _unknown(top, KNOWN_KEYS, "", source)
    for section, known in KNOWN_KEYS.items():
        value = raw.get(section)
        if known is not None and isinstance(value, Mapping):
            problems += _unknown(value, known, f"{section}.", source)
    return problems


def _unknown(mapping: Mapping[Any, Any], known: Mapping[str, Any] | frozenset[str], prefix: str,
             source: str) -> list[Problem]:
    problems = []
    for key in mapping:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), sorted(known), n=1) if len(str(key)) < 100 else []
        hint = f"; did you mean '{prefix}{close[0]}'?" if close else f" (known: {', '.join(sorted(known))})"
        problems.append(Problem("UNKNOWN_SETTINGS_KEY", f"unknown key '{prefix}{str(key)[:100]}'{hint}", source))
    return problems


def check_keys(raw: object, path: Path) -> None:
    """Refuse a settings file with keys nothing reads (a typo would silently change nothing), all at once.

    Raises:
        EnvironmentSetupError: code ``INVALID_SPARK_SETTINGS``, one line per problem, each naming the file.
    """
    problems = unknown_keys(raw, str(path))
    if problems:
        lines = [f"{len(problems)} problem(s) in the local Spark settings"]
        lines += [f"  - {problem.render()}" for problem in problems]
        raise EnvironmentSetupError("\n".join(lines), code="INVALID_SPARK_SETTINGS", file=str(path))

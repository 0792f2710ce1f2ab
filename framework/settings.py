"""Local Spark settings (``conf/spark.yaml``), shared by the runner, the tests and the benchmarks."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from framework.errors import EnvironmentSetupError
from framework.runner.sizing import SmallUpdates

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def project_root() -> Path:
    """The repository root: ``$MEDALLION_HOME`` if set, else the folder holding the ``framework`` package."""
    return Path(os.environ.get("MEDALLION_HOME", PROJECT_ROOT))


@dataclass(frozen=True)
class LocalSparkSettings:
    """What a local SparkSession is built from."""

    spark_conf: dict[str, str] = field(default_factory=dict)
    jar_coordinates: tuple[str, ...] = ()
    jar_cache_dir: Path = Path(".cache/jars")
    small_updates: SmallUpdates = field(default_factory=SmallUpdates)
    driver_java_options: tuple[str, ...] = ()

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
    raw: dict[str, Any] = yaml.safe_load(path.read_text()) or {}
    jars = raw.get("jars") or {}
    cache = Path(os.environ.get("MEDALLION_JARS_DIR", jars.get("cache_dir", ".cache/jars")))
    if not cache.is_absolute():
        cache = root / cache
    conf = {str(k): str(v) for k, v in (raw.get("spark_conf") or {}).items()}
    small = raw.get("small_updates") or {}
    try:
        small_updates = SmallUpdates(int(small.get("max_input_bytes", 0)),
                                     {str(k): str(v) for k, v in (small.get("spark_conf") or {}).items()})
    except (TypeError, ValueError, AttributeError) as exc:
        raise EnvironmentSetupError(f"{path}: small_updates must hold max_input_bytes (a number of bytes) and "
                                    f"spark_conf (a mapping): {exc}") from None
    java_options = raw.get("driver_java_options") or []
    if not isinstance(java_options, list) or not all(isinstance(o, str) for o in java_options):
        raise EnvironmentSetupError(f"{path}: driver_java_options must be a list of JVM options (strings), "
                                    f"got {java_options!r}")
    return LocalSparkSettings(spark_conf=conf, jar_coordinates=tuple(jars.get("maven") or ()),
                              jar_cache_dir=cache, small_updates=small_updates,
                              driver_java_options=tuple(java_options))

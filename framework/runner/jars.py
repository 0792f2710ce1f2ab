"""Fetch the Delta jars from Maven Central once into the project-local cache; later runs are offline.

Run as ``python -m framework.runner.jars fetch``. Uses Maven (``mvn dependency:copy``) with its default
repository; a no-op taking milliseconds when every jar is already cached.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from framework.errors import EnvironmentSetupError
from framework.settings import LocalSparkSettings, load_local_settings

_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy"


def missing_jars(settings: LocalSparkSettings) -> list[tuple[str, Path]]:
    return [(c, p) for c, p in zip(settings.jar_coordinates, settings.jar_paths(), strict=True) if not p.exists()]


def fetch(settings: LocalSparkSettings | None = None) -> list[Path]:
    """Download every configured jar that is not cached yet; return the jar paths."""
    settings = settings or load_local_settings()
    todo = missing_jars(settings)
    if not todo:
        return settings.jar_paths()
    mvn = shutil.which("mvn")
    if mvn is None:
        raise EnvironmentSetupError(
            "Maven (mvn) is needed once to fetch the Delta jars: install it (apt-get install maven) or copy "
            f"{', '.join(c for c, _ in todo)} into {settings.jar_cache_dir}"
        )
    settings.jar_cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        for coordinate, path in todo:
            print(f"fetching {coordinate} -> {path}", file=sys.stderr)
            result = subprocess.run(
                [mvn, "-B", "-q", _DEPENDENCY_PLUGIN, f"-Dartifact={coordinate}:jar",
                 f"-DoutputDirectory={settings.jar_cache_dir}"],
                cwd=work, capture_output=True, text=True, check=False,
            )
            if result.returncode != 0 or not path.exists():
                raise EnvironmentSetupError(
                    f"could not fetch {coordinate} from Maven Central (mvn exit {result.returncode}):\n"
                    f"{(result.stdout + result.stderr)[-2000:]}"
                )
    return settings.jar_paths()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] != ["fetch"]:
        print("usage: python -m framework.runner.jars fetch", file=sys.stderr)
        return 2
    try:
        for path in fetch():
            print(path.name)
    except EnvironmentSetupError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

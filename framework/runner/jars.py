"""Fetch the Delta jars and the JDBC drivers (``jars.maven`` in ``conf/spark.yaml``) from Maven Central once
into the project-local cache, and build the framework's own small jar from ``jvm/src``; later runs are offline.

Run as ``python -m framework.runner.jars fetch``. Uses Maven (``mvn dependency:copy``) with its default
repository and ``javac`` against pyspark's jars and the fetched ones; a no-op taking milliseconds when everything
is in place.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from framework.errors import EnvironmentSetupError
from framework.settings import FRAMEWORK_JAR_PREFIX, LocalSparkSettings, load_local_settings

_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy"


def missing_jars(settings: LocalSparkSettings) -> list[tuple[str, Path]]:
    """The configured jars that are not cached yet, each as its Maven coordinate and its cache path."""
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
            "Maven (mvn) is needed once to fetch the Delta jars and JDBC drivers: install it (apt-get install maven) or copy "
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


JVM_SOURCES = Path(__file__).resolve().parents[2] / "jvm" / "src"


def _java_files(sources: Path) -> list[Path]:
    return sorted(sources.rglob("*.java")) if sources.is_dir() else []


def _resources(sources: Path) -> list[Path]:
    """The files of ``sources`` copied into the jar as they are (``META-INF/services`` registrations)."""
    folder = sources / "META-INF"
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []


def framework_jar(settings: LocalSparkSettings, sources: Path = JVM_SOURCES) -> Path | None:
    """Where the jar built from ``sources`` lives (named by the sources' hash, so an edit means a rebuild);
    None when the checkout has no Java sources."""
    files = _java_files(sources)
    if not files:
        return None
    digest = hashlib.sha256()
    for path in [*files, *_resources(sources)]:
        digest.update(path.relative_to(sources).as_posix().encode() + b"\0" + path.read_bytes())
    return settings.jar_cache_dir / f"{FRAMEWORK_JAR_PREFIX}{digest.hexdigest()[:12]}.jar"


def build_framework_jar(settings: LocalSparkSettings | None = None, sources: Path = JVM_SOURCES) -> Path | None:
    """Compile ``jvm/src`` against pyspark's jars and the fetched ones (Delta's) into the jar cache (once per
    version of the sources).

    Returns the jar, or None when there is nothing to build or no ``javac`` (a JRE only): the framework then
    runs without it, on Hadoop's stock local file system (slower: it forks ``chmod`` for every file it writes).
    """
    settings = settings or load_local_settings()
    jar = framework_jar(settings, sources)
    if jar is None or jar.exists():
        return jar
    javac = shutil.which("javac")
    if javac is None:
        print("setup: no javac (a JDK is needed to build jvm/src); running without the framework's jar, on "
              "Hadoop's slower local file system (apt-get install openjdk-17-jdk-headless to build it)",
              file=sys.stderr)
        return None
    import pyspark

    # pyspark's jars, and the configured ones (delta-storage: medallion.storage implements its LogStore)
    classpath = os.pathsep.join([str(Path(pyspark.__file__).parent / "jars" / "*"),
                                 *(str(p) for p in settings.jar_paths() if p.exists())])
    with tempfile.TemporaryDirectory() as work:
        classes = Path(work) / "classes"
        result = subprocess.run([javac, "-nowarn", "--release", "17", "-cp", classpath, "-d", str(classes),
                                 *[str(p) for p in _java_files(sources)]],
                                capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise EnvironmentSetupError(f"javac could not build {sources}:\n{(result.stdout + result.stderr)[-3000:]}")
        jar.parent.mkdir(parents=True, exist_ok=True)
        partial = jar.with_suffix(".jar.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
            out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: medallion setup\n\n")
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
            for path in _resources(sources):
                out.write(path, path.relative_to(sources).as_posix())
        partial.replace(jar)
    for stale in jar.parent.glob(f"{FRAMEWORK_JAR_PREFIX}*.jar"):
        if stale != jar:
            stale.unlink()
    return jar


def main(argv: list[str] | None = None) -> int:
    """``python -m framework.runner.jars fetch``: download the missing jars; return the exit code."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] != ["fetch"]:
        print("usage: python -m framework.runner.jars fetch", file=sys.stderr)
        return 2
    try:
        for path in fetch():
            print(path.name)
        built = build_framework_jar()
        if built is not None:
            print(built.name)
    except EnvironmentSetupError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

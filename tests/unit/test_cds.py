"""framework.runner.cds and the driver's launch options: which JVM maps the class-data sharing archive, which
one writes it, and which one gets the one-command and small-command options (no Spark)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from framework.runner import cds, session
from framework.settings import LocalSparkSettings, SmallUpdates


def _settings(tmp_path: Path, sharing: bool = True) -> LocalSparkSettings:
    return LocalSparkSettings(spark_conf={"spark.driver.memory": "3g"}, jar_cache_dir=tmp_path / "jars",
                              driver_java_options=("-XX:MaxInlineLevel=3",), class_data_sharing=sharing,
                              one_command_java_options=("-XX:+UseParallelGC", "-Xss4m"),
                              small_updates=SmallUpdates(100, {"a": "b"}, ("-XX:TieredStopAtLevel=1",)))


@pytest.fixture()
def java(tmp_path: Path) -> Path:
    binary = tmp_path / "jdk" / "bin" / "java"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    return binary


def _jar(tmp_path: Path, size: int) -> Path:
    jar = tmp_path / "jars" / "delta.jar"
    jar.parent.mkdir(parents=True, exist_ok=True)
    jar.write_bytes(b"x" * size)
    return jar


def test_the_archive_is_named_after_the_jvm_the_jars_and_the_options(tmp_path: Path, java: Path) -> None:
    settings = _settings(tmp_path)
    jar = _jar(tmp_path, 10)
    first = cds.archive_path(settings, java, [jar], ["-XX:MaxInlineLevel=3"])
    assert first.parent == tmp_path / "cds" and first.name.startswith("driver-") and first.suffix == ".jsa"
    assert cds.archive_path(settings, java, [jar], ["-XX:MaxInlineLevel=3"]) == first
    assert cds.archive_path(settings, java, [jar], ["-XX:MaxInlineLevel=4"]) != first
    other_java = tmp_path / "other" / "java"
    other_java.parent.mkdir()
    other_java.write_text("")
    assert cds.archive_path(settings, other_java, [jar], ["-XX:MaxInlineLevel=3"]) != first
    _jar(tmp_path, 11)  # a jar replaced by another build of it
    assert cds.archive_path(settings, java, [jar], ["-XX:MaxInlineLevel=3"]) != first


def test_a_jar_rebuilt_with_the_same_size_needs_another_archive(tmp_path: Path, java: Path) -> None:
    # the JVM checks each class-path jar's modification time as well as its size, and silently ignores an
    # archive written with another: a jar rebuilt from the same sources must not find the old archive
    settings = _settings(tmp_path)
    jar = _jar(tmp_path, 10)
    first = cds.archive_path(settings, java, [jar], [])
    os.utime(jar, ns=(jar.stat().st_atime_ns, jar.stat().st_mtime_ns + 1_000_000_000))
    assert cds.archive_path(settings, java, [jar], []) != first


def test_an_existing_archive_is_mapped_quietly_and_a_missing_one_is_not_asked_for(
        tmp_path: Path, java: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cds.DISABLE_ENV, raising=False)
    monkeypatch.delenv(cds.DUMP_ENV, raising=False)
    settings = _settings(tmp_path)
    jar = _jar(tmp_path, 10)
    assert cds.java_options(settings, java, [jar], []) == []
    archive = cds.archive_path(settings, java, [jar], [])
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"archive")
    options = cds.java_options(settings, java, [jar], [])
    assert options[0] == f"-XX:SharedArchiveFile={archive}" and "-Xlog:cds=off" in options
    monkeypatch.setenv(cds.DISABLE_ENV, "0")
    assert cds.java_options(settings, java, [jar], []) == []
    monkeypatch.delenv(cds.DISABLE_ENV)
    assert cds.java_options(_settings(tmp_path, sharing=False), java, [jar], []) == []
    monkeypatch.setenv(cds.DUMP_ENV, str(tmp_path / "out.tmp"))  # the training process writes, never maps
    assert cds.java_options(settings, java, [jar], [])[0] == f"-XX:ArchiveClassesAtExit={tmp_path / 'out.tmp'}"


@pytest.fixture()
def launch_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No archive, no JVM option variables, Spark's direct launch possible, no command planned."""
    for name in ("JDK_JAVA_OPTIONS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "SPARK_SUBMIT_OPTS", "PYSPARK_SUBMIT_ARGS",
                 "SPARK_TESTING", "PYSPARK_PIN_THREAD", session.SMALL_JAVA_OPTIONS_ENV, cds.DUMP_ENV,
                 "MEDALLION_SPARK_SUBMIT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "spark-conf"))  # no spark-env.sh there
    monkeypatch.setattr(session, "_ONE_COMMAND", [])
    return monkeypatch


def test_launch_options_add_the_archive_and_the_one_command_options_only_to_a_jvm_this_process_starts(
        tmp_path: Path, java: Path, launch_env: pytest.MonkeyPatch) -> None:
    settings = _settings(tmp_path)
    jar = _jar(tmp_path, 10)
    base = session.driver_java_options(settings)
    archive = cds.archive_path(settings, java, [jar], base)
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"archive")
    # a test session or a server: neither the one-command nor the small-command options
    mapped = [*base, *cds.java_options(settings, java, [jar], base)]
    assert session.launch_java_options(settings, [jar], java) == mapped
    session.plan_one_command(True)
    started = session.launch_java_options(settings, [jar], java)
    assert started == [*mapped, "-XX:+UseParallelGC", "-Xss4m", "-XX:TieredStopAtLevel=1"]
    assert f"-XX:SharedArchiveFile={archive}" in started
    assert session.launch_java_options(settings, [jar], None) == base  # spark-submit's JVM
    launch_env.setenv(session.SMALL_JAVA_OPTIONS_ENV, "0")
    assert session.launch_java_options(settings, [jar], java)[-2:] == ["-XX:+UseParallelGC", "-Xss4m"]
    launch_env.delenv(session.SMALL_JAVA_OPTIONS_ENV)
    session.plan_one_command(False)  # a large command: the one-command options only
    assert session.launch_java_options(settings, [jar], java)[-2:] == ["-XX:+UseParallelGC", "-Xss4m"]


@pytest.mark.parametrize("where, value", [
    ("JDK_JAVA_OPTIONS", "-Xmx1g -XX:+UseSerialGC"),
    ("JAVA_TOOL_OPTIONS", "-XX:+UseZGC"),
    ("_JAVA_OPTIONS", "-XX:+UseShenandoahGC"),
    ("SPARK_SUBMIT_OPTS", "-XX:-UseParallelGC"),  # turning the collector off is a choice too
    ("spark.driver.defaultJavaOptions", "-XX:+UseG1GC -Dx=1"),
    ("driver_java_options", "-Xmx2g -XX:+UseG1GC"),  # an item holding two options, as Spark splits them
    ("small_updates", "-XX:+UseEpsilonGC"),
])
def test_a_collector_chosen_elsewhere_wins_over_the_one_command_options(
        tmp_path: Path, java: Path, launch_env: pytest.MonkeyPatch, where: str, value: str) -> None:
    # the JVM refuses to start with two collectors: the one-command options then add everything but theirs
    launch_env.setenv(cds.DISABLE_ENV, "0")
    session.plan_one_command(where == "small_updates")
    settings, conf = _settings(tmp_path), {}
    if where == "driver_java_options":
        settings = replace(settings, driver_java_options=(value,))
    elif where == "small_updates":
        settings = replace(settings, small_updates=replace(settings.small_updates, java_options=(value,)))
    elif where.startswith("spark."):
        conf = {where: value}
    else:
        launch_env.setenv(where, value)
    options = session.launch_java_options(settings, [], java, conf)
    assert "-XX:+UseParallelGC" not in options and "-Xss4m" in options


def test_options_that_only_tune_a_collector_leave_the_one_command_collector(
        tmp_path: Path, java: Path, launch_env: pytest.MonkeyPatch) -> None:
    launch_env.setenv(cds.DISABLE_ENV, "0")
    launch_env.setenv("JDK_JAVA_OPTIONS", "-XX:+UseMaximumCompactionOnSystemGC -XX:ParallelGCThreads=2")
    session.plan_one_command(False)
    assert "-XX:+UseParallelGC" in session.launch_java_options(_settings(tmp_path), [], java)


def test_unknowable_options_leave_the_collector_to_the_jvm(tmp_path: Path, launch_env: pytest.MonkeyPatch) -> None:
    # a spark-env.sh (bash that may export SPARK_SUBMIT_OPTS) or PySpark's own launch: the collector is left out
    assert not session.collector_chosen_elsewhere([], {}, {"SPARK_CONF_DIR": str(tmp_path)})
    (tmp_path / "spark-env.sh").write_text("export SPARK_SUBMIT_OPTS=-XX:+UseG1GC\n")
    assert session.collector_chosen_elsewhere([], {}, {"SPARK_CONF_DIR": str(tmp_path)})
    assert session.collector_chosen_elsewhere([], {}, {"PYSPARK_SUBMIT_ARGS": "--driver-java-options x pyspark-shell"})
    assert session.collector_chosen_elsewhere(["-Dx='unbalanced"], {}, {"SPARK_CONF_DIR": str(tmp_path / "n")})

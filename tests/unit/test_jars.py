"""The framework's own jar: built from jvm/src by javac at set-up, named by the sources' hash."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from framework.errors import EnvironmentSetupError
from framework.runner import jars
from framework.settings import LocalSparkSettings

HELLO = "package demo;\npublic class Hello { public static String hi() { return \"hi\"; } }\n"


def _settings(tmp_path: Path) -> LocalSparkSettings:
    return LocalSparkSettings(spark_conf={}, jar_coordinates=(), jar_cache_dir=tmp_path / "jars")


def _sources(tmp_path: Path, text: str = HELLO) -> Path:
    src = tmp_path / "src"
    (src / "demo").mkdir(parents=True, exist_ok=True)
    (src / "demo" / "Hello.java").write_text(text)
    return src


def test_the_jar_is_named_by_the_sources_and_rebuilt_when_they_change(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    src = _sources(tmp_path)
    first = jars.framework_jar(settings, src)
    assert first is not None and first.name.startswith("medallion-jvm-") and not first.exists()
    assert jars.framework_jar(settings, src) == first
    _sources(tmp_path, HELLO.replace('"hi"', '"hello"'))
    assert jars.framework_jar(settings, src) != first
    assert jars.framework_jar(settings, tmp_path / "no-such-folder") is None


def test_build_compiles_the_sources_into_the_cache_and_drops_stale_builds(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    src = _sources(tmp_path)
    built = jars.build_framework_jar(settings, src)
    assert built is not None and built.exists()
    with zipfile.ZipFile(built) as jar:
        assert "demo/Hello.class" in jar.namelist()
    _sources(tmp_path, HELLO.replace('"hi"', '"hello"'))
    rebuilt = jars.build_framework_jar(settings, src)
    assert rebuilt is not None and rebuilt != built
    assert sorted(p.name for p in settings.jar_cache_dir.iterdir()) == [rebuilt.name]


def test_a_compile_error_names_the_file(tmp_path: Path) -> None:
    src = _sources(tmp_path, "package demo;\npublic class Hello { int x = ; }\n")
    with pytest.raises(EnvironmentSetupError, match=r"Hello\.java"):
        jars.build_framework_jar(_settings(tmp_path), src)


def test_without_javac_the_framework_runs_without_its_jar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(jars.shutil, "which", lambda name: None)
    assert jars.build_framework_jar(_settings(tmp_path), _sources(tmp_path)) is None
    assert "no javac" in capsys.readouterr().err


def test_the_repository_sources_are_found() -> None:
    assert (jars.JVM_SOURCES / "medallion" / "fs" / "NoForkLocalFileSystem.java").exists()


def test_service_registrations_go_into_the_jar_and_its_name(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    src = _sources(tmp_path)
    plain = jars.framework_jar(settings, src)
    services = src / "META-INF" / "services" / "org.apache.spark.sql.sources.DataSourceRegister"
    services.parent.mkdir(parents=True)
    services.write_text("demo.Hello\n")
    built = jars.build_framework_jar(settings, src)
    assert built is not None and built != plain  # a registration edited means a rebuild
    with zipfile.ZipFile(built) as jar:
        assert jar.read("META-INF/services/org.apache.spark.sql.sources.DataSourceRegister") == b"demo.Hello\n"

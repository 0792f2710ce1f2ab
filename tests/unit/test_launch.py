"""framework/runner/launch.py: when the driver JVM is started without Spark's scripts, and with what."""

from __future__ import annotations

from pathlib import Path

from framework.runner import launch


def test_the_direct_launch_is_taken_only_where_it_reproduces_the_scripts(tmp_path: Path) -> None:
    home = tmp_path / "spark"
    (home / "conf").mkdir(parents=True)
    assert launch.direct_launch_possible(home, {})
    assert not launch.direct_launch_possible(home, {launch.FALLBACK_ENV: "1"})
    assert not launch.direct_launch_possible(home, {"PYSPARK_SUBMIT_ARGS": "--master local pyspark-shell"})
    assert not launch.direct_launch_possible(home, {"SPARK_TESTING": "1"})
    assert not launch.direct_launch_possible(home, {"PYSPARK_PIN_THREAD": "false"})
    (home / "conf" / "spark-env.sh").write_text("export SPARK_LOCAL_DIRS=/data\n")  # bash the scripts source
    assert not launch.direct_launch_possible(home, {})
    other = tmp_path / "conf"
    other.mkdir()
    assert launch.direct_launch_possible(home, {"SPARK_CONF_DIR": str(other)})


def test_the_jvm_gets_the_environment_the_scripts_export(tmp_path: Path) -> None:
    env = launch.script_env(tmp_path, {"PATH": "/bin", "SPARK_CONF_DIR": "/etc/spark"})
    assert env["PATH"] == "/bin" and env["SPARK_HOME"] == str(tmp_path) and env["SPARK_CONF_DIR"] == "/etc/spark"
    assert env["SPARK_ENV_LOADED"] == "1" and env["SPARK_SCALA_VERSION"] == "2.13" and env["PYTHONHASHSEED"] == "0"
    assert launch.script_env(tmp_path, {})["SPARK_CONF_DIR"] == str(tmp_path / "conf")


def test_a_jvm_that_exits_before_it_listens_is_an_environment_error(tmp_path: Path) -> None:
    import pytest

    from framework.errors import EnvironmentSetupError

    with pytest.raises(EnvironmentSetupError, match="exited with code 1 before it started Py4J"):
        launch._start(["false"], {"PATH": "/usr/bin:/bin"})
    with pytest.raises(EnvironmentSetupError, match="could not start"):  # a kept command's java is gone
        launch._start([str(tmp_path / "java")], {"PATH": "/usr/bin:/bin"})


def test_an_unreadable_kept_command_is_a_miss(tmp_path: Path) -> None:
    entry = tmp_path / "k.json"
    assert launch._read_kept(entry) is None
    for text in ("", "{", "[]", '{"a": 1}', "[1, 2]"):
        entry.write_text(text)
        assert launch._read_kept(entry) is None, text
    entry.write_text('["/usr/bin/java", "-cp", "x"]')
    assert launch._read_kept(entry) == ["/usr/bin/java", "-cp", "x"]

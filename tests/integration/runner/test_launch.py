"""framework/runner/launch.py against Spark's own launcher: the command it computes once is kept and reused, and
another setting, environment or settings file asks the launcher again."""

from __future__ import annotations

from pathlib import Path

from framework.runner import launch
from framework.runner.session import check_java


def _command(cache: Path, env: dict[str, str], *conf: str) -> list[str]:
    args = [launch._SUBMIT, *[a for c in conf for a in ("--conf", c)], "pyspark-shell"]
    return launch.cached_command(cache, check_java(), launch._spark_home(), args, env)


def test_the_launchers_command_is_computed_once_per_settings(tmp_path: Path) -> None:
    cache = tmp_path / "launch"
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    env = launch.script_env(launch._spark_home(), {"SPARK_CONF_DIR": str(conf_dir), "PATH": "/usr/bin:/bin"})
    first = _command(cache, env, "spark.driver.memory=3g", "spark.driver.extraJavaOptions=-Da=1 -Db=2")
    assert first[0].endswith("java") and "-Xmx3g" in first and "-Da=1" in first and "-Db=2" in first
    assert first[first.index(launch._SUBMIT):] == [launch._SUBMIT, "--conf", "spark.driver.memory=3g", "--conf",
                                                   "spark.driver.extraJavaOptions=-Da=1 -Db=2", "pyspark-shell"]
    (kept,) = cache.glob("*.json")
    kept.write_text(kept.read_text().replace("-Xmx3g", "-Xmx3g-from-the-cache"))
    assert "-Xmx3g-from-the-cache" in _command(cache, env, "spark.driver.memory=3g",
                                                "spark.driver.extraJavaOptions=-Da=1 -Db=2")
    assert "-Xmx2g" in _command(cache, env, "spark.driver.memory=2g")
    (conf_dir / "spark-defaults.conf").write_text("spark.driver.memory 1g\n")  # read by the launcher
    assert "-Xmx1g" in _command(cache, env)
    assert len(list(cache.glob("*.json"))) == 3

"""framework/runner/launch.py against Spark's own launcher: the command it computes once is kept and reused, and
another setting, environment or settings file asks the launcher again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from framework.runner import launch
from framework.runner.session import check_java
from framework.settings import PROJECT_ROOT


def _command(cache: Path, env: dict[str, str], *conf: str) -> list[str]:
    args = [launch._SUBMIT, *[a for c in conf for a in ("--conf", c)], "pyspark-shell"]
    return launch.cached_command(cache, check_java(), launch.spark_home_dir(), args, env)[0]


def test_the_launchers_command_is_computed_once_per_settings(tmp_path: Path) -> None:
    cache = tmp_path / "launch"
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    env = launch.script_env(launch.spark_home_dir(), {"SPARK_CONF_DIR": str(conf_dir), "PATH": "/usr/bin:/bin"})
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


def test_a_corrupt_kept_command_is_computed_again(tmp_path: Path) -> None:
    cache = tmp_path / "launch"
    env = launch.script_env(launch.spark_home_dir(), {"SPARK_CONF_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"})
    first = _command(cache, env, "spark.driver.memory=1g")
    (kept,) = cache.glob("*.json")
    kept.write_text('["trunc')
    assert _command(cache, env, "spark.driver.memory=1g") == first
    assert json.loads(kept.read_text()) == first


# Run in a fresh Python process: the JVM started directly, the early warm-up's work done before any SparkContext
# exists (unguarded, so that a failure shows), then a session on that JVM reads and writes a Delta table.
_EARLY = """
import sys
from pathlib import Path
from pyspark import SparkContext
from framework.runner import jvm_warmup, launch
from framework.runner.session import check_java, driver_class_path, get_or_create_session
from framework.settings import load_local_settings

conf = {"spark.driver.extraClassPath": ":".join(map(str, driver_class_path(load_local_settings())))}
gateway = launch.launch_gateway(conf, check_java(), Path(sys.argv[1]))
SparkContext._ensure_initialized(gateway=gateway)
jvm = SparkContext._jvm
jvm.scala.reflect.runtime.package.universe()
for name in jvm_warmup.EARLY_CLASSES:
    jvm.java.lang.Class.forName(name)
assert jvm_warmup.parse_schema(jvm, jvm_warmup.SCHEMA).startswith("id BIGINT")
spark = get_or_create_session()
spark.range(3).write.format("delta").save(sys.argv[2])
print("rows", spark.read.format("delta").load(sys.argv[2]).count())
# Spark ML's functions, which its session extension registered when the early warm-up initialised it
from pyspark.ml.functions import vector_to_array
from pyspark.ml.linalg import Vectors
print("vector", spark.createDataFrame([(Vectors.dense([1.0, 2.0]),)], ["v"]).select(vector_to_array("v")).first()[0])
"""


def test_the_early_warmup_before_any_session_leaves_a_working_jvm(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-c", _EARLY, str(tmp_path / "launch"), str(tmp_path / "t")],
                            capture_output=True, text=True, timeout=300, cwd=PROJECT_ROOT, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "rows 3" in result.stdout
    assert "vector [1.0, 2.0]" in result.stdout


# A process that planned one command: its JVM gets the one-command options, and the plan ends with that JVM.
_PLANNED = """
from framework.runner import session
session.plan_one_command(False)
spark = session.get_or_create_session()
bean = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
print("arguments", list(bean.getInputArguments()))
print("plan", session._ONE_COMMAND)
"""


def test_a_planned_command_starts_its_jvm_with_the_one_command_options_once() -> None:
    result = subprocess.run([sys.executable, "-c", _PLANNED], capture_output=True, text=True, timeout=300,
                            cwd=PROJECT_ROOT, check=False, env={k: v for k, v in os.environ.items()
                                                                if k not in ("JDK_JAVA_OPTIONS", "_JAVA_OPTIONS")})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "'-XX:+UseParallelGC'" in result.stdout
    assert "plan []" in result.stdout

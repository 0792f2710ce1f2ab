"""The one place a local SparkSession is built, from ``conf/spark.yaml`` (and :func:`session_conf`, which changes
its settings for a while)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from framework.errors import EnvironmentSetupError
from framework.runner.jars import build_framework_jar, framework_jar
from framework.settings import LocalSparkSettings, load_local_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def get_or_create_session(settings: LocalSparkSettings | None = None,
                          extra_conf: dict[str, str] | None = None) -> SparkSession:
    """Return the active SparkSession, or build one with the tuned local settings and the cached Delta jars."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    from pyspark import SparkContext

    if SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        check_java()  # before the gateway starts: its own failure is JAVA_GATEWAY_EXITED and a page of output
    settings = settings or load_local_settings()
    jars = settings.jar_paths()
    missing = [str(p) for p in jars if not p.exists()]
    if missing:
        raise EnvironmentSetupError(
            f"Delta jars missing: {', '.join(missing)}. Run `make setup` (or "
            "`python -m framework.runner.jars fetch`) once with network access."
        )
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder
    conf = dict(settings.spark_conf)
    conf.setdefault("spark.sql.warehouse.dir", str(settings.jar_cache_dir.parent / "spark-warehouse"))
    conf.update(extra_conf or {})
    for key, value in conf.items():
        builder = builder.config(key, value)
    own = framework_jar(settings)
    if own is not None and not own.exists():  # jvm/src changed since set-up: build it now (a few seconds)
        print(f"session: building {own.name} from jvm/src (the Java sources changed since `make setup`)",
              file=sys.stderr)
        own = build_framework_jar(settings)
    if own is not None and own.exists():
        jars = [*jars, own]
        # Hadoop's local file system forks `chmod` for every file it creates (no native library in pyspark);
        # this subclass sets permissions in-process (jvm/src/medallion/fs). Needs the jar on the driver's
        # class path: Spark resolves file system classes before it loads `spark.jars`.
        if "spark.hadoop.fs.file.impl" not in conf:
            builder = builder.config("spark.hadoop.fs.file.impl", "medallion.fs.NoForkLocalFileSystem")
    builder = builder.config("spark.jars", ",".join(str(p) for p in jars))
    builder = builder.config("spark.driver.extraClassPath", os.pathsep.join(str(p) for p in jars))
    if "spark.driver.extraJavaOptions" not in conf:  # a value given in spark_conf is used as it is
        java_options = list(settings.driver_java_options)
        log_config = settings.jar_cache_dir.parent.parent / "conf" / "log4j2.properties"
        if log_config.exists():
            java_options.append(f"-Dlog4j.configurationFile={log_config}")
        if java_options:
            builder = builder.config("spark.driver.extraJavaOptions", " ".join(java_options))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("FATAL")  # failures are reported by the runner
    quiet_query_context_loggers()
    return spark


def quiet_query_context_loggers() -> None:
    """Silence the loggers pyspark writes a Spark error with a query context to (``DIVIDE_BY_ZERO`` under ANSI,
    ...): a JSON line on stderr holding the JVM's stack trace, when the exception is created. The runner reports
    every failure itself, with its cause; pyspark's own line would be a page of Java frames before it."""
    import logging

    from pyspark.logger import PySparkLogger

    for name in ("DataFrameQueryContextLogger", "SQLQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


JDK_HINT = ("install a Java 17 JDK, e.g. `sudo apt-get install openjdk-17-jdk-headless` (Debian/Ubuntu) or "
            "`brew install openjdk@17` (macOS), then put `java` on PATH or set JAVA_HOME")


def check_java(environ: Mapping[str, str] | None = None) -> Path:
    """Return the ``java`` that Spark's launcher will run: ``$JAVA_HOME/bin/java``, else ``java`` on ``PATH``.

    Args:
        environ: The environment to look in (default: this process's).

    Raises:
        EnvironmentSetupError: There is none; the message is one line that says how to install a JDK.
    """
    environ = os.environ if environ is None else environ
    java_home = environ.get("JAVA_HOME")
    if java_home:  # spark-class uses JAVA_HOME when it is set, and PATH only when it is not
        java = Path(java_home) / "bin" / "java"
        if java.is_file() and os.access(java, os.X_OK):
            return java
        raise EnvironmentSetupError(f"Java not found: JAVA_HOME={java_home} has no bin/java; {JDK_HINT}",
                                    code="JAVA_NOT_FOUND")
    found = shutil.which("java", path=environ.get("PATH", ""))
    if found is None:
        raise EnvironmentSetupError(f"Java not found (no `java` on PATH, JAVA_HOME not set); {JDK_HINT}",
                                    code="JAVA_NOT_FOUND")
    return Path(found)


@contextmanager
def session_conf(spark: SparkSession, conf: dict[str, str]) -> Iterator[None]:
    """Set ``conf`` on the session for the block, then put back what was there."""
    previous: dict[str, str | None] = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in previous.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)

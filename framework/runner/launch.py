"""Starting the driver JVM without Spark's launcher scripts (issue 21, cold start).

PySpark starts its JVM with ``bin/spark-submit``: two bash scripts, then a first JVM (Spark's launcher,
``org.apache.spark.launcher.Main``) that only computes the second one's command line (class path, memory, JVM
options), then the driver JVM; PySpark then polls for the driver's connection file every 0.1 s. On two cores that
is 0.25-0.35 s before the driver JVM even starts, in every cold ``medallion run``.

The launcher's answer depends only on its arguments (the session's settings), the ``java`` binary, Spark's
installation and the environment it reads, so it is computed once and kept in ``.cache/launch/`` under a hash of
all of them; later sessions with the same settings start the driver JVM directly, with the environment the scripts
would have exported, and poll for its connection file every 10 ms. Everything after that is PySpark's own:
:func:`connect` builds the same Py4J gateway ``pyspark.java_gateway.launch_gateway`` builds.

Whatever this module does not reproduce goes through ``launch_gateway`` as before: a ``spark-env.sh`` (bash code
the scripts source), ``PYSPARK_SUBMIT_ARGS``, ``SPARK_TESTING``, unpinned Py4J threads, or Windows.
``MEDALLION_SPARK_SUBMIT=1`` always takes that path.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from framework import internals
from framework.errors import EnvironmentSetupError

FALLBACK_ENV = "MEDALLION_SPARK_SUBMIT"  # "1": always PySpark's launch through spark-submit
_MAIN = "org.apache.spark.launcher.Main"
_SUBMIT = "org.apache.spark.deploy.SparkSubmit"
# what the launcher reads besides its arguments (spark-class, load-spark-env.sh, AbstractCommandBuilder)
_ENV_PREFIXES = ("SPARK_", "HADOOP_", "YARN_", "JAVA_", "_JAVA_", "JDK_JAVA_", "PYSPARK_", "LD_LIBRARY_PATH",
                 "DYLD_LIBRARY_PATH")
# PySpark's imports into the gateway's JVM view (pyspark/java_gateway.py, launch_gateway)
_IMPORTS = ("org.apache.spark.SparkConf", "org.apache.spark.api.java.*", "org.apache.spark.api.python.*",
            "org.apache.spark.ml.python.*", "org.apache.spark.mllib.api.python.*", "org.apache.spark.resource.*",
            "org.apache.spark.sql.Encoders", "org.apache.spark.sql.OnSuccessCall", "org.apache.spark.sql.functions",
            "org.apache.spark.sql.classic.*", "org.apache.spark.sql.api.python.*", "org.apache.spark.sql.hive.*",
            "scala.Tuple2")


def launch_gateway(conf: Mapping[str, str], java: Path, cache: Path) -> Any:
    """Start the driver JVM with ``conf`` (as ``spark-submit --conf k=v ... pyspark-shell`` would) and return
    PySpark's Py4J gateway to it; through PySpark's own ``launch_gateway`` when :func:`direct_launch_possible`
    says no. A kept command whose JVM exits before it listens is dropped and the launcher asked again, once.

    Args:
        conf: The session's settings.
        java: The ``java`` binary Spark's scripts would run.
        cache: Where launcher answers are kept (``.cache/launch``).

    Raises:
        EnvironmentSetupError: Spark's launcher failed (its messages in the error), or the driver JVM exited
            before it listened (its own output went to this process's stderr, as with ``spark-submit``).
    """
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway as pyspark_launch

    spark_home = spark_home_dir()
    if not direct_launch_possible(spark_home, os.environ):
        return pyspark_launch(SparkConf().setAll(list(conf.items())))
    args = [_SUBMIT, *[a for k, v in conf.items() for a in ("--conf", f"{k}={v}")], "pyspark-shell"]
    env = script_env(spark_home, os.environ)
    command, kept = cached_command(cache, java, spark_home, args, env)
    try:
        return connect(*_start(command, env))
    except EnvironmentSetupError:
        if kept is None:
            raise
        kept.unlink(missing_ok=True)  # stale (a JVM or Spark changed in place): ask the launcher
        return connect(*_start(cached_command(cache, java, spark_home, args, env)[0], env))


def direct_launch_possible(spark_home: Path, environ: Mapping[str, str]) -> bool:
    """Whether this module reproduces what Spark's scripts would do here (see the module docstring)."""
    conf_dir = Path(environ.get("SPARK_CONF_DIR") or spark_home / "conf")
    return (os.name == "posix" and environ.get(FALLBACK_ENV) != "1" and not (conf_dir / "spark-env.sh").exists()
            and "PYSPARK_SUBMIT_ARGS" not in environ and not environ.get("SPARK_TESTING")
            and environ.get("PYSPARK_PIN_THREAD", "true").lower() == "true")


def script_env(spark_home: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment ``bin/spark-submit`` and ``bin/spark-class`` give the JVMs they start (without a
    ``spark-env.sh``): ``SPARK_HOME``, ``SPARK_CONF_DIR``, ``SPARK_ENV_LOADED``, ``SPARK_SCALA_VERSION``,
    ``PYTHONHASHSEED``, as PySpark's ``SPARK_CONNECT_MODE``."""
    return {**environ, "SPARK_HOME": str(spark_home), "SPARK_ENV_LOADED": "1",
            "SPARK_CONF_DIR": environ.get("SPARK_CONF_DIR") or str(spark_home / "conf"),
            "SPARK_SCALA_VERSION": "2.13", "PYTHONHASHSEED": "0", "SPARK_CONNECT_MODE": "0"}


def cached_command(cache: Path, java: Path, spark_home: Path, args: Sequence[str],
                   env: Mapping[str, str]) -> tuple[list[str], Path | None]:
    """The driver JVM's command line for ``args``: from ``cache`` when the launcher computed it before for the
    same ``java``, Spark installation, settings file and environment, else from the launcher now (and kept).
    Also the kept entry it came from (None when the launcher was asked now), to drop if it proves stale."""
    entry = cache / f"{_key(java, spark_home, args, env)}.json"
    kept = _read_kept(entry)
    if kept is not None:
        return kept, entry
    return _launcher_and_keep(entry, java, spark_home, args, env), None


def launcher_command(java: Path, spark_home: Path, args: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """Run Spark's launcher as ``bin/spark-class`` does and return the command line it prints. What it prints
    besides (its warnings, an ``Error:`` about the arguments) goes to this process's stderr, as there."""
    launcher = [str(java), "-Xmx128m", *shlex.split(env.get("SPARK_LAUNCHER_OPTS", "")), "-cp",
                str(spark_home / "jars" / "*"), _MAIN, *args]
    try:
        result = subprocess.run(launcher, env=dict(env), capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EnvironmentSetupError(f"Spark's launcher could not run ({launcher[0]} ... {_MAIN}): {error}") from None
    messages, _, command = result.stdout.partition(b"\0\n")
    parts = [p.decode() for p in command.split(b"\0")[:-1]]
    if result.returncode != 0 or not parts:
        raise EnvironmentSetupError(f"Spark's launcher failed (exit {result.returncode}): "
                                    f"{(messages + result.stderr).decode(errors='replace')[-2000:]}")
    if messages.strip() or result.stderr.strip():
        sys.stderr.write((messages + result.stderr).decode(errors="replace"))
    return parts


def _read_kept(entry: Path) -> list[str] | None:
    """A kept command line; None when there is none or it cannot be read (then the launcher is asked)."""
    try:
        command = json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(command, list) and command and all(isinstance(a, str) for a in command)
    return command if ok else None


def _launcher_and_keep(entry: Path, java: Path, spark_home: Path, args: Sequence[str],
                       env: Mapping[str, str]) -> list[str]:
    """The launcher's command line, kept in ``entry`` unless the launcher had something to say (a usage error
    answers with a command too) or the folder cannot be written."""
    command = launcher_command(java, spark_home, args, env)
    if "--usage-error" in command:
        return command
    temp = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        temp.write_text(json.dumps(command), encoding="utf-8")
        os.replace(temp, entry)
    except OSError:
        temp.unlink(missing_ok=True)
    return command


def connect(port: int, secret: str, process: subprocess.Popen[bytes] | None) -> Any:
    """PySpark's gateway to the JVM listening on ``port`` (``launch_gateway``'s, pinned threads)."""
    from py4j.clientserver import ClientServer, JavaParameters, PythonParameters
    from py4j.java_gateway import java_import

    gateway = ClientServer(java_parameters=JavaParameters(port=port, auth_token=secret, auto_convert=True),
                           python_parameters=PythonParameters(port=0, eager_load=False))
    gateway.proc = process
    for name in _IMPORTS:
        java_import(gateway.jvm, name)
    return gateway


def _start(command: Sequence[str], env: Mapping[str, str]) -> tuple[int, str, subprocess.Popen[bytes]]:
    """Start the driver JVM; its Py4J port and secret once it wrote them, and the process."""
    from pyspark.serializers import UTF8Deserializer, read_int

    with tempfile.TemporaryDirectory() as folder:
        info = Path(folder) / "conn_info"
        try:
            process = subprocess.Popen(list(command), stdin=subprocess.PIPE,  # the JVM exits when the pipe breaks
                                       env={**env, "_PYSPARK_DRIVER_CONN_INFO_PATH": str(info)},
                                       preexec_fn=_ignore_interrupts)
        except OSError as error:  # the binary a kept command names is gone
            raise EnvironmentSetupError(f"the driver JVM could not start ({command[0]}): {error}") from None
        _import_while_the_jvm_starts()
        while process.poll() is None and not info.is_file():
            time.sleep(0.01)
        if not info.is_file():
            raise EnvironmentSetupError(f"the driver JVM exited with code {process.returncode} before it "
                                        f"started Py4J ({' '.join(command[:2])} ... {_SUBMIT}; its output above)")
        with info.open("rb") as stream:
            return read_int(stream), UTF8Deserializer().loads(stream), process


def _import_while_the_jvm_starts() -> None:
    """Import what PySpark's first Py4J call with arguments imports, while the JVM starts on the other core.

    PySpark's converter of NumPy arrays, which Py4J asks about every argument, imports ``pyspark.testing.utils``
    to know whether NumPy is installed, and that module imports pandas, NumPy and pyarrow: 0.3-0.45 s of Python
    on the session's critical path (``SparkConf()``), while the JVM takes 0.6-0.9 s to start listening here.
    """
    import pyspark.testing.utils  # noqa: F401  (imported for its side effect: the modules it loads)


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the Python process's (PySpark does the same)


def _key(java: Path, spark_home: Path, args: Sequence[str], env: Mapping[str, str]) -> str:
    """A hash of everything the launcher's answer depends on: the ``java`` binary (path, size, time), Spark's
    installation (its version and jars), the arguments, ``spark-defaults.conf`` and the environment it reads."""
    import pyspark

    digest = hashlib.sha256()
    real_java = Path(os.path.realpath(java))
    stat = real_java.stat() if real_java.exists() else None
    defaults = Path(env["SPARK_CONF_DIR"]) / "spark-defaults.conf"
    digest.update(json.dumps({
        "java": [str(real_java), stat.st_size if stat else -1, stat.st_mtime_ns if stat else -1],
        "spark": [str(spark_home), pyspark.__version__, sorted(p.name for p in (spark_home / "jars").glob("*.jar"))],
        "args": list(args), "defaults": defaults.read_text(errors="replace") if defaults.exists() else None,
        "env": sorted((k, v) for k, v in env.items() if k.startswith(_ENV_PREFIXES)),
    }).encode())
    return digest.hexdigest()[:24]


def spark_home_dir() -> Path:
    """The Spark installation PySpark runs (``SPARK_HOME``, else pyspark's own folder)."""
    return Path(internals.find_spark_home())

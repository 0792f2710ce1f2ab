"""The one place a SparkSession is built, from ``conf/spark.yaml`` (and :func:`session_conf`, which changes
its settings for a while): local by default, on a cluster with a master URL (``master:`` there, ``--master``,
or ``spark-submit``'s), where the jars and the pipeline's Python modules are shipped to the executors."""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shlex
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from framework import internals
from framework.errors import EnvironmentSetupError
from framework.runner import cds
from framework.runner.jars import build_framework_jar, framework_jar
from framework.runner.jvm_warmup import start_early_warmup, start_warmup
from framework.runner.launch import direct_launch_possible, launch_gateway, spark_home_dir
from framework.runner.py4j_lookups import cache_lookups
from framework.settings import (
    FRAMEWORK_JAR_PREFIX,
    PROJECT_ROOT,
    LocalSparkSettings,
    is_local_master,
    load_local_settings,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def get_or_create_session(settings: LocalSparkSettings | None = None,
                          extra_conf: dict[str, str] | None = None) -> SparkSession:
    """Return the active SparkSession, or build one with the tuned local settings and the cached Delta jars."""
    from pyspark.sql import SparkSession

    cache_lookups()
    active = SparkSession.getActiveSession()
    if active is not None:
        ship_python_modules(active)
        return active
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # started by spark-submit (or pyspark's shell)
    # before the gateway starts: its own failure is JAVA_GATEWAY_EXITED and a page of output
    java = check_java() if not internals.gateway_started() and not submitted else None
    settings = settings or load_local_settings()
    conf = master_conf(settings.spark_conf, settings.master, submitted=submitted)
    if _on_this_machine(conf.get("spark.master")):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors run this Python: the same path there
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    conf.setdefault("spark.sql.warehouse.dir", str(settings.jar_cache_dir.parent / "spark-warehouse"))
    conf.update(extra_conf or {})
    jars = driver_class_path(settings)
    # Hadoop's local file system forks `chmod` for every file it creates (no native library in pyspark); this
    # subclass sets permissions in-process (jvm/src/medallion/fs). Needs the jar on the driver's class path:
    # Spark resolves file system classes before it loads `spark.jars`.
    if any(p.name.startswith(FRAMEWORK_JAR_PREFIX) for p in jars) and "spark.hadoop.fs.file.impl" not in conf:
        conf["spark.hadoop.fs.file.impl"] = "medallion.fs.NoForkLocalFileSystem"
    log_store_fallback(conf, jars)
    # local mode's executors use the driver's class path, which this process sets when it starts the JVM
    if java is None or not is_local_master(conf.get("spark.master", "")):
        conf["spark.jars"] = ",".join([*(str(p) for p in jars), *filter(None, [conf.get("spark.jars")])])
    conf["spark.driver.extraClassPath"] = os.pathsep.join(str(p) for p in jars)
    if "spark.driver.extraJavaOptions" not in conf:  # a value given in spark_conf is used as it is
        java_options = launch_java_options(settings, jars, java, conf)
        if java_options:
            conf["spark.driver.extraJavaOptions"] = " ".join(java_options)
    warm = os.environ.get("MEDALLION_NO_WARMUP") != "1"
    if java is not None:  # this process starts the JVM (and warms it up while the SparkContext starts)
        _launch_jvm(conf, java, settings.jar_cache_dir.parent / "launch", warm)
        _ONE_COMMAND.clear()  # planned for this JVM only
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if warm:
        start_warmup(spark)  # JVM initialisations every update needs, off its critical path
    spark.sparkContext.setLogLevel("FATAL")  # failures are reported by the runner
    quiet_query_context_loggers()
    ship_python_modules(spark)
    return spark


ATOMIC_LOG_STORE = "medallion.storage.AtomicLocalLogStore"  # conf/spark.yaml's, from the framework's jar
_FILE_LOG_STORE_KEY = "spark.delta.logStore.file.impl"


def log_store_fallback(conf: dict[str, str], jars: Sequence[Path]) -> None:
    """Delta's ``LocalLogStore`` for ``file:`` paths instead of the framework's when the framework's jar is not on
    the driver's class path (no ``javac``): Delta would fail on the first commit, not finding the class. Said on
    stderr, since commits of several processes to one table are then not safe."""
    has_jar = any(p.name.startswith(FRAMEWORK_JAR_PREFIX) for p in jars)
    if has_jar or conf.get(_FILE_LOG_STORE_KEY) != ATOMIC_LOG_STORE:
        return
    conf[_FILE_LOG_STORE_KEY] = "io.delta.storage.LocalLogStore"
    print(f"session: without the framework's jar, Delta commits to local paths use LocalLogStore instead of "
          f"{ATOMIC_LOG_STORE}: atomic inside this process only (two processes writing one table may lose "
          "a commit); install a JDK (javac) and run `make setup` to build the jar", file=sys.stderr)


def _launch_jvm(conf: Mapping[str, str], java: Path, cache: Path, warm: bool) -> None:
    """Start the JVM with ``conf`` (:mod:`framework.runner.launch`; ``SparkSession.builder.getOrCreate`` with the
    same settings then finds it running) and, when ``warm``, its early warm-up
    (:func:`framework.runner.jvm_warmup.start_early_warmup`)."""
    internals.initialize_gateway(launch_gateway(conf, java, cache))
    if warm:
        start_early_warmup(internals.active_jvm())


def driver_class_path(settings: LocalSparkSettings) -> list[Path]:
    """The jars the driver needs besides pyspark's: the configured Maven jars and the framework's own (built
    now when ``jvm/src`` changed since set-up).

    Raises:
        EnvironmentSetupError: A configured jar has not been fetched.
    """
    jars = settings.jar_paths()
    missing = [str(p) for p in jars if not p.exists()]
    if missing:
        raise EnvironmentSetupError(
            f"Delta jars missing: {', '.join(missing)}. Run `make setup` (or "
            "`python -m framework.runner.jars fetch`) once with network access."
        )
    own = framework_jar(settings)
    if own is not None and not own.exists():  # jvm/src changed since set-up: build it now (a few seconds)
        print(f"session: building {own.name} from jvm/src (the Java sources changed since `make setup`)",
              file=sys.stderr)
        own = build_framework_jar(settings)
    return [*jars, own] if own is not None and own.exists() else jars


def driver_java_options(settings: LocalSparkSettings) -> list[str]:
    """``driver_java_options`` of ``conf/spark.yaml`` and the log4j configuration (without the class-data
    sharing archive's options, see :mod:`framework.runner.cds`)."""
    java_options = list(settings.driver_java_options)
    log_config = settings.jar_cache_dir.parent.parent / "conf" / "log4j2.properties"
    if log_config.exists():
        java_options.append(f"-Dlog4j.configurationFile={log_config}")
    return java_options


def launch_java_options(settings: LocalSparkSettings, jars: list[Path], java: Path | None,
                        conf: Mapping[str, str] | None = None) -> list[str]:
    """The driver's JVM options: :func:`driver_java_options`, and when this process starts the JVM (with the
    ``java`` binary; None: it runs already, or spark-submit started it) the class-data sharing archive's
    (:mod:`framework.runner.cds`) and, for one command (:func:`plan_one_command`), ``one_command_java_options``
    (without their garbage collector when anything else may choose one, see :func:`collector_chosen_elsewhere`)
    and, when its inputs are small, ``small_updates.driver_java_options``."""
    java_options = driver_java_options(settings)
    if java is None:
        return java_options
    java_options += cds.java_options(settings, java, jars, java_options)
    if not _ONE_COMMAND:
        return java_options
    small = (list(settings.small_updates.java_options)
             if _ONE_COMMAND == [True] and os.environ.get(SMALL_JAVA_OPTIONS_ENV) != "0" else [])
    one = list(settings.one_command_java_options)
    if collector_chosen_elsewhere([*java_options, *small], conf or {}, os.environ):
        one = [o for o in one if not _chooses_collector([o])]
    return [*java_options, *one, *small]


# the JVM options that choose a garbage collector (or turn one off): the JVM refuses to start with two chosen
_COLLECTOR = re.compile(r"-XX:[+-]Use(Serial|Parallel|ParallelOld|G1|Z|Shenandoah|Epsilon|ConcMarkSweep)GC")
# where else the driver JVM's options come from: the java launcher's variables, and spark-class's
_JAVA_OPTION_VARIABLES = ("JDK_JAVA_OPTIONS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "SPARK_SUBMIT_OPTS")


def collector_chosen_elsewhere(options: Sequence[str], conf: Mapping[str, str], environ: Mapping[str, str]) -> bool:
    """Whether the driver JVM's other options may choose a garbage collector: ``options``, Spark's
    ``spark.driver.defaultJavaOptions``, the variables the java launcher and Spark's scripts read; or whether they
    cannot be known (a ``spark-env.sh`` or PySpark's own launch, see :func:`framework.runner.launch
    .direct_launch_possible`)."""
    if not direct_launch_possible(spark_home_dir(), environ):
        return True
    sources = [*options, conf.get("spark.driver.defaultJavaOptions", ""),
               *(environ.get(name, "") for name in _JAVA_OPTION_VARIABLES)]
    return _chooses_collector(sources)


def _chooses_collector(options: Sequence[str]) -> bool:
    """Whether ``options`` hold a collector option (each item may hold several, as Spark splits them); an item
    that does not split (an unbalanced quote) may hold one."""
    for item in options:
        try:
            if any(_COLLECTOR.fullmatch(word) for word in shlex.split(item)):
                return True
        except ValueError:
            return True
    return False


def session_running() -> bool:
    """Whether this process has a SparkSession already (a server's, a test's, a notebook's): one that outlives
    the command about to run."""
    return _active_session() is not None


_ONE_COMMAND: list[bool] = []  # set by plan_one_command: [whether its inputs are small]
SMALL_JAVA_OPTIONS_ENV = "MEDALLION_SMALL_JAVA_OPTIONS"  # "0": never add small_updates.driver_java_options


def plan_one_command(small: bool) -> None:
    """Tell the session this process is about to start that it runs one command (``medallion run``,
    ``validate`` or ``graph`` in its own process, not a server, a continuous run or a test session), and whether
    its inputs are small (:func:`framework.runner.sizing.expected_small`). The next JVM this process starts gets
    ``one_command_java_options`` (conf/spark.yaml: the throughput collector), and for a small command
    ``small_updates.driver_java_options`` too (the C1 compiler only); the plan ends with that JVM's start. Callers
    skip it when a session runs already (:func:`session_running`)."""
    _ONE_COMMAND[:] = [small]


_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def master_conf(spark_conf: Mapping[str, str], master: str | None, *, submitted: bool = False) -> dict[str, str]:
    """The session's settings with its master: ``master`` when given (``--master``, ``master:``), else
    ``spark-submit``'s when ``submitted`` (``spark.master`` of ``spark_conf`` is dropped: a builder setting would
    win over the launcher's), else ``spark_conf``'s. The loopback driver address of ``conf/spark.yaml`` is kept
    only when the executors run on this machine: elsewhere they must reach the driver at a routable address.

    Args:
        spark_conf: ``spark_conf`` of ``conf/spark.yaml``.
        master: The master URL asked for, or None.
        submitted: The Python process was started by ``spark-submit``.

    Returns:
        A new mapping of Spark settings.
    """
    conf = dict(spark_conf)
    if master:
        conf["spark.master"] = master
    elif submitted:
        conf.pop("spark.master", None)
    if not _on_this_machine(conf.get("spark.master")):
        for key in ("spark.driver.host", "spark.driver.bindAddress"):
            if conf.get(key) in _LOOPBACK:
                del conf[key]
    return conf


def _on_this_machine(master: str | None) -> bool:
    """Whether every executor of ``master`` runs on this machine: local mode, or a standalone master at a
    loopback address (its workers connect to it there). None (spark-submit's, unknown here) is not."""
    if master is None:
        return False
    if is_local_master(master) or master.startswith("local-cluster["):
        return True
    if master.startswith("spark://"):
        hosts = [urlsplit(f"//{part}").hostname or "" for part in master[len("spark://"):].split(",")]
        return all(host in _LOOPBACK or host.startswith("127.") for host in hosts)
    return False


# Folders whose Python modules the pipeline imports (its root and library folders, registered by the CLI before
# the update): shipped, with the framework, to the executors of a cluster session.
_PYTHON_FOLDERS: list[Path] = []
_PRUNED = frozenset({"__pycache__", "node_modules", "site-packages", "_delta_log"})


def ship_python_folders(folders: Iterable[Path]) -> None:
    """Register folders whose modules the executors of a cluster session must import (no effect locally).

    Pipeline files are run on the driver; a UDF's function is pickled by value when its module was loaded from
    a pipeline file, but anything it reaches by reference (the framework, a module of the repository imported
    before the update, an ``import`` inside the function) is imported on the executor. Each folder's ``.py``
    files go there as a zip (``SparkContext.addPyFile``) when the session's master is not local.

    Args:
        folders: Folders as the loader puts them on ``sys.path`` (the spec's root, each library's folder).
    """
    for folder in folders:
        path = Path(folder).resolve()
        if path not in _PYTHON_FOLDERS:
            _PYTHON_FOLDERS.append(path)
    active = _active_session()
    if active is not None:
        ship_python_modules(active)


def _active_session() -> SparkSession | None:
    if "pyspark.sql" not in sys.modules:  # no session without pyspark imported; do not import it for nothing
        return None
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession()


def ship_python_modules(spark: SparkSession) -> list[Path]:
    """Ship the framework package and the registered folders to the executors of ``spark`` when its master is
    not local (once per content: zips are named by a hash of their files). Returns the zips shipped now."""
    context = spark.sparkContext
    if is_local_master(context.master or "local"):
        return []
    shipped: set[str] = context.__dict__.setdefault("_medallion_py_files", set())
    out = _zip_folder()
    added = []
    sources = [(PROJECT_ROOT, ("framework",)), *((f, None) for f in _PYTHON_FOLDERS)]
    for folder, only in sources:
        archive = python_zip(folder, out, only=only)
        if archive is None or archive.name in shipped:
            continue
        context.addPyFile(str(archive))
        shipped.add(archive.name)
        added.append(archive)
        # addPyFile also puts the zip on the driver's sys.path: the driver keeps importing from the folders
        # themselves (the loader adds them while pipeline files run), as in local mode
        from pyspark import SparkFiles

        on_driver = os.path.join(SparkFiles.getRootDirectory(), archive.name)
        if on_driver in sys.path:
            sys.path.remove(on_driver)
    return added


def python_zip(folder: Path, out: Path, only: tuple[str, ...] | None = None) -> Path | None:
    """Zip the ``.py`` files under ``folder`` (or under its entries ``only``) into ``out``, paths relative to
    ``folder``; hidden folders, virtual environments, caches and Delta tables are skipped. The zip is named
    after the folder and a hash of its files; None when there is no ``.py`` file.

    Args:
        folder: The folder whose modules become importable (the zip's root).
        out: Where to write the zip.
        only: Names of entries of ``folder`` to include (default: all).

    Returns:
        The zip's path, or None.
    """
    files = sorted(_python_files(folder, only))
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    archive = out / f"{'-'.join(only) if only else folder.name or 'root'}-{digest.hexdigest()[:12]}.zip"
    if not archive.exists():
        partial = archive.with_suffix(".tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as handle:
            for path in files:
                handle.write(path, path.relative_to(folder).as_posix())
        partial.replace(archive)
    return archive


def _python_files(folder: Path, only: tuple[str, ...] | None) -> Iterator[Path]:
    tops = [folder / name for name in only] if only is not None else [folder]
    for top in tops:
        if top.is_file() and top.suffix == ".py":
            yield top
            continue
        for here, dirs, names in os.walk(top):
            if (Path(here) / "pyvenv.cfg").exists():  # a virtual environment: its packages are not the pipeline's
                dirs[:] = []
                continue
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _PRUNED]
            yield from (Path(here) / name for name in names if name.endswith(".py"))


_ZIP_DIR: list[Path] = []


def _zip_folder() -> Path:
    """This process's folder for the zips shipped to executors (removed when the process exits)."""
    if not _ZIP_DIR:
        folder = Path(tempfile.mkdtemp(prefix="medallion-pyfiles-"))
        atexit.register(shutil.rmtree, folder, True)
        _ZIP_DIR.append(folder)
    return _ZIP_DIR[0]


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

"""One triggered pipeline update, start to end: lock the storage, load the libraries, resolve and validate,
run the selected flows, publish the tables, close the event log, print the summary.

Each step lives in its own module (``resolve``, ``refresh``, ``execute``, ``catalog``, ``progress``); this
one only puts them in order and makes sure every update ends the same way, failed or not: the event log says
how it ended and why, and the summary is printed.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from framework.dbutils import LocalDbutils
from framework.declarations import DatasetKind
from framework.errors import GraphError, PipelineError, UpdateError
from framework.events import EventLog
from framework.kafka.check import register_kafka_secrets
from framework.loader import load_pipeline, pipeline_environment
from framework.runner.catalog import CatalogPublisher, PublishedTable
from framework.runner.catalogs import DEFAULT_PUBLISHING_MODE, publishing_mode
from framework.runner.environment import UpdateEnvironment
from framework.runner.execute import Execution, flow_events
from framework.runner.lock import update_lock
from framework.runner.mapped_paths import mapped_paths
from framework.runner.object_store import check_object_store, hadoop_runtime_conf, startup_conf
from framework.runner.prewarm import note_written
from framework.runner.progress import ConsoleListener, EventLogListener, Listeners, ProgressListener
from framework.runner.proxy import SessionProxy
from framework.runner.reads import ReadRouter
from framework.runner.refresh import clear_dataset, refresh_targets, select_flows
from framework.runner.replace_where import check_overrides
from framework.runner.reset import reset_checkpoints, resettable
from framework.runner.resolve import Resolution, Resolver
from framework.runner.results import FlowResult, UpdateResult
from framework.runner.session import get_or_create_session
from framework.runner.sizing import small_update_reason
from framework.runner.summary import print_summary
from framework.session_settings import session_conf
from framework.settings import load_local_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.graph import PipelineGraph
    from framework.spec import PipelineSpec
    from framework.storage.url import StoragePath


@dataclass(frozen=True)
class UpdateOptions:
    """How to run an update (the ``medallion run`` flags)."""

    full_refresh: bool = False
    full_refresh_selection: tuple[str, ...] | None = None
    refresh_selection: tuple[str, ...] | None = None
    reset_checkpoint_selection: tuple[str, ...] | None = None  # flows whose checkpoints go, their data kept
    # one-update REPLACE WHERE predicates for backfills: flow name -> predicate (replace_where.check_overrides)
    replace_where_overrides: Mapping[str, str] | None = None
    write_report: bool = False
    max_concurrent_flows: int = 4  # flows are mostly driver-side latency on small data; 4 overlap better than 2
    out: TextIO | None = None  # progress and summary (default stderr / stdout); None for default
    continuous: bool | None = None  # keep running until ``stop`` is set (None: the spec's `continuous`)
    stop: threading.Event | None = None  # set it to end a continuous update
    # A set ``stop`` ends the update as CANCELED, as a user's stop does on Databricks (the CLI's Ctrl-C / SIGTERM),
    # rather than COMPLETED; run_update then raises KeyboardInterrupt like an interrupted update.
    stop_cancels: bool = False
    # The session ends with this update (`medallion run` in a process of its own): its tables are not published
    # to an in-memory local catalog that nothing could read afterwards (a persistent one still gets them).
    session_ends_with_update: bool = False


def run_update(spec: PipelineSpec, options: UpdateOptions | None = None,
               spark: SparkSession | None = None) -> UpdateResult:
    """Run one triggered update of ``spec``.

    Returns the result for every failure in pipeline code or data (``succeeded`` False, ``error`` or the
    flows' ``error`` set). Raises only when the update could not start: another update holds the storage
    (:class:`~framework.errors.ConcurrentUpdateError`, before the JVM starts) or the environment is incomplete
    (:class:`~framework.errors.EnvironmentSetupError`); and KeyboardInterrupt on Ctrl-C, after every query
    stopped, the event log closed as CANCELED and the summary was printed."""
    options = options or UpdateOptions()
    started = time.perf_counter()
    update_id = str(uuid.uuid4())
    result = UpdateResult(update_id, False, [], 0.0, spec.storage, spec.events_dir)
    if isinstance(spec.storage, Path):  # an object store's folders need no creating
        spec.storage.mkdir(parents=True, exist_ok=True)
    with update_lock(spec.storage, update_id):
        session = spark or get_or_create_session(extra_conf=startup_conf(spec.spark_conf))
        env = UpdateEnvironment.create(spec, session, update_id, read_secrets=False)
        check_object_store(env.spark, spec)  # before the event log's first commit and any flow
        register_kafka_secrets({**spec.configuration, **spec.spark_conf})  # JAAS entries, *.password
        events = EventLog(str(spec.events_dir), spec.pipeline_id, spec.name, update_id)
        listener = Listeners(EventLogListener(events, update_id),
                             ConsoleListener(spec.name, update_id, options.out or sys.stderr))
        try:
            _run_logged(env, options, events, listener, result)
        except KeyboardInterrupt:  # the event log is closed (CANCELED): the summary, then on to the caller
            result.seconds = time.perf_counter() - started
            print_summary(spec, result, out=options.out or sys.stdout)
            raise
        result.seconds = time.perf_counter() - started
    if options.write_report and result.flows:
        result.report = _write_report(spec, update_id, options.out or sys.stderr)
    print_summary(spec, result, out=options.out or sys.stdout)
    return result


def _run_logged(env: UpdateEnvironment, options: UpdateOptions, events: EventLog, listener: ProgressListener,
                result: UpdateResult) -> None:
    """Run the update with the event log open; whatever happens, the log ends with the update's state."""
    spark = env.spark
    events.start_writer(spark)
    with ExitStack() as restore:  # the session's own settings come back when the update ends
        restore.enter_context(session_conf(spark, {**env.spec.spark_conf, **hadoop_runtime_conf(env.spec.spark_conf),
                                                   "pipelines.updateId": env.update_id}))
        interrupted = False
        try:
            _run(env, options, events, listener, result)
        except PipelineError as exc:
            result.error = exc
        except KeyboardInterrupt:  # Ctrl-C: every query stopped (runner/execute.py); the log says CANCELED
            interrupted = True
            result.error = UpdateError("the update was interrupted (Ctrl-C)", code="UPDATE_CANCELED")
        except Exception as exc:  # pipeline code failed outside a flow: reported, never raised
            result.error = UpdateError(f"the update failed: {type(exc).__name__}: {exc}", code="UPDATE_FAILED")
            result.error.__cause__ = exc
        failed = result.error is not None or any(f.status == "FAILED" for f in result.flows)
        result.succeeded = not failed
        listener.update_finished("CANCELED" if interrupted else "FAILED" if failed else "COMPLETED", result.error)
    try:
        events.close(spark)
    except Exception as exc:  # the update's outcome stands; the log's trouble is reported
        print(f"warning: could not write the event log: {type(exc).__name__}: {str(exc)[:300]}", file=sys.stderr)
    if interrupted:
        raise KeyboardInterrupt


def _run(env: UpdateEnvironment, options: UpdateOptions, events: EventLog, listener: ProgressListener,
         result: UpdateResult) -> None:
    spec = env.spec
    listener.update_started(len(spec.libraries), {
        "cause": "USER_ACTION", "full_refresh": options.full_refresh,
        "full_refresh_selection": list(options.full_refresh_selection or []),
        "refresh_selection": list(options.refresh_selection or []),
        "reset_checkpoint_selection": list(options.reset_checkpoint_selection or []),
        "replace_where_overrides": [{"flow_name": k, "predicate_override": v}
                                    for k, v in (options.replace_where_overrides or {}).items()],
        "config": dict(spec.configuration), "development": spec.development,
        "effective_publishing_mode": publishing_mode(spec)})
    env.read_secrets()  # a secret that is not set fails the update here, with its event log and summary
    prepare_session(env)
    router = ReadRouter(env)
    proxy = SessionProxy(router)
    dbutils = LocalDbutils(env.mapper, spec.configuration, spec.root / ".secrets.env")
    loaded = load_pipeline(spec, spark=proxy, dbutils=dbutils)
    events.hooks.extend(h.function for h in loaded.registry.event_hooks)
    with pipeline_environment(proxy, dbutils), mapped_paths(env.mapper):
        resolution = Resolver(router, loaded.registry).resolve()
        graph = resolution.graph
        result.kinds = {k: v.value for k, v in graph.kinds.items()}
        listener.graph_ready(graph, list(flow_events(graph).values()))
        selected = select_flows(graph, [*(options.refresh_selection or ()),
                                        *(options.full_refresh_selection or ())])
        cleared = _full_refresh(env, resolution, options, selected)
        reset_checkpoints(env, graph, options.reset_checkpoint_selection or ())
        env.replace_where_overrides.update(check_overrides(graph.registry.flows.values(),
                                                           options.replace_where_overrides or {}))
        # A continuous update keeps the settings it started with (a small one's included) until it is stopped:
        # its streaming queries take the session's settings when they start.
        with session_conf(env.spark, _small_update(env, router, graph, listener, result)):
            execution = Execution(router, graph, selected, listener, max_concurrent=options.max_concurrent_flows,
                                  prebuilt=resolution.reusable_sources(cleared))
            result.flows = execution.run()
            if execution.interrupted:
                raise KeyboardInterrupt
            continuous = options.continuous if options.continuous is not None else spec.continuous
            if continuous and not any(f.status == "FAILED" for f in result.flows):
                publish_tables(env, graph)  # readable while the update runs
                # a commit of the event log every few seconds at most: not one per micro-batch for hours
                events.min_commit_interval_s = float(spec.configuration.get(EVENT_COMMIT_KEY, "10"))
                _run_continuously(router, graph, selected, listener, execution, options)
        refused = [] if _catalog_ends_here(env, options) else publish_tables(env, graph)
        note_written(env.table_path(loaded.registry, f.target) for f in result.flows
                     if f.status == "COMPLETED" and result.kinds.get(f.target) == "streaming_table")
        if router.live_names and publishing_mode(spec) == DEFAULT_PUBLISHING_MODE:
            listener.note("LIVE.<name> is the legacy publishing mode's virtual schema (deprecated by Databricks): "
                          "in the default publishing mode name datasets directly, or as schema.name")
        if refused:
            names = ", ".join(f"'{t.name}' ({t.path})" for t in refused)
            listener.note(f"not registered in the local catalog (Spark's local catalog allows only letters, digits "
                          f"and _ in table names): {names}; read them with spark.read.format('delta').load(path)")


EVENT_COMMIT_KEY = "medallion.continuous.eventLogCommitSeconds"


def _run_continuously(router: ReadRouter, graph: PipelineGraph, selected: set[str], listener: ProgressListener,
                      execution: Execution, options: UpdateOptions) -> None:
    """The continuous phase (``runner/continuous.py``) until ``options.stop`` is set; its failure fails the
    update."""
    from framework.runner.continuous import ContinuousRun

    stop = options.stop or threading.Event()
    run = ContinuousRun(router, graph, selected, listener, execution.events, execution.results)
    listener.note("continuous: the flows keep running until the update is stopped (Ctrl-C)")
    def stop_when_asked() -> None:
        stop.wait()
        run.stop()

    watcher = threading.Thread(target=stop_when_asked, daemon=True, name="medallion-stop")
    watcher.start()
    run.run()
    stop.set()
    if run.error is not None:
        raise UpdateError(f"a flow kept failing in continuous mode: {run.error}", code="FLOW_RETRIES_EXHAUSTED")
    if options.stop_cancels:  # stopped gracefully by the user: every batch in flight committed, the log says so
        raise KeyboardInterrupt


def _full_refresh(env: UpdateEnvironment, resolution: Resolution, options: UpdateOptions,
                  selected: set[str]) -> set[str]:
    graph = resolution.graph
    targets = resettable(graph, refresh_targets(graph, selected, full_refresh=options.full_refresh,
                                                full_refresh_selection=options.full_refresh_selection or ()))
    for key in targets:
        stand_in = resolution.stand_ins.get(key)  # the query's output: the truncated table's new columns
        clear_dataset(env, graph, key, stand_in.schema if stand_in is not None else None)
    return targets


def _small_update(env: UpdateEnvironment, router: ReadRouter, graph: PipelineGraph, listener: ProgressListener,
                  result: UpdateResult) -> dict[str, str]:
    """The small-update Spark settings when the update's inputs are small (see ``sizing.py``), else none."""
    spec = env.spec
    small = load_local_settings().small_updates
    registry = graph.registry
    tables = {str(spec.tables_dir), *(env.table_path(registry, k) for k, d in registry.datasets.items() if d.path)}
    result.small_update = small_update_reason(router.inputs, sorted(tables), small)
    if result.small_update is None:
        return {}
    # the spec's own spark_conf wins over the small-update settings
    conf = {k: v for k, v in small.spark_conf.items() if k not in spec.spark_conf}
    listener.note(f"small update ({result.small_update}): {', '.join(sorted(conf))} set for its flows")
    return conf


def prepare_session(env: UpdateEnvironment) -> None:
    """What pipeline code may read besides its own datasets: the framework's Spark Python data sources
    (``jdbc_incremental``, once per session), the catalogs of the spec's ``catalog`` and of its three-part
    table names (``catalogs.py``), and the spec's external ``tables``."""
    from framework.runner.catalogs import ensure_catalogs
    from framework.sources import register_sources
    from framework.sources.external import register_external_tables

    spark = env.spark
    ensure_catalogs(spark, env.spec, [t.name for t in env.spec.tables])
    if not getattr(spark, "_medallion_sources", False):
        register_sources(spark)
        spark._medallion_sources = True  # type: ignore[attr-defined]
    if env.spec.tables:
        register_external_tables(spark, env.spec)


def _catalog_ends_here(env: UpdateEnvironment, options: UpdateOptions) -> bool:
    """Whether the session's catalog is gone once this update ends: a session that ends with it, with Spark's
    in-memory catalog (on a cold update of 1M rows, registering its 3 tables took 0.5 s)."""
    return options.session_ends_with_update and \
        env.spark.conf.get("spark.sql.catalogImplementation", "in-memory") == "in-memory"


def publish_tables(env: UpdateEnvironment, graph: PipelineGraph) -> list[PublishedTable]:
    """Publish the pipeline's tables that have a commit to the local catalog as ``<schema>.<name>`` (or the
    schema and catalog their name gives); return those whose name the local catalog refuses."""
    registry, spec = graph.registry, env.spec
    return CatalogPublisher.for_session(env.spark).publish(
        PublishedTable.of(dataset.name, env.table_path(registry, key), schema=spec.schema, catalog=spec.catalog)
        for key, dataset in registry.datasets.items()
        if graph.kinds[key] is not DatasetKind.VIEW and not dataset.private)


def resolve_pipeline(spec: PipelineSpec, spark: SparkSession | None = None) -> tuple[ReadRouter, Resolution]:
    """Load and resolve every query with Spark (no data is read or written); validate the graph and every
    expectation (rule files included). Returns the read router (what the pipeline reads) and the resolution."""
    session = spark or get_or_create_session(extra_conf=startup_conf(spec.spark_conf))
    env = UpdateEnvironment.create(spec, session, "validate")
    prepare_session(env)
    router = ReadRouter(env)
    proxy = SessionProxy(router)
    dbutils = LocalDbutils(env.mapper, spec.configuration, spec.root / ".secrets.env")
    loaded = load_pipeline(spec, spark=proxy, dbutils=dbutils)
    with pipeline_environment(proxy, dbutils):
        resolution = Resolver(router, loaded.registry).resolve()
    return router, resolution


def validate_with_spark(spec: PipelineSpec, spark: SparkSession | None = None) -> PipelineGraph:
    """Dry run (``medallion validate``): see :func:`resolve_pipeline`."""
    return resolve_pipeline(spec, spark)[1].graph


def _write_report(spec: PipelineSpec, update_id: str, out: TextIO) -> StoragePath | None:
    from framework.runner.reporting import write_reports

    try:
        paths = write_reports(spec, update_id=update_id)
    except Exception as exc:  # the update's outcome stands; the report's trouble is reported
        print(f"warning: the data-quality report could not be written: {type(exc).__name__}: {str(exc)[:300]}",
              file=out)
        return None
    return next((p for p in paths if str(p).endswith(".html")), None)


__all__ = ["FlowResult", "GraphError", "UpdateOptions", "UpdateResult", "resolve_pipeline", "run_update",
           "update_lock", "validate_with_spark"]

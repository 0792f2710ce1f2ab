"""One triggered pipeline update: load, resolve, run every selected flow in dependency order, record the
event log, publish tables to the local catalog, print a summary."""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from framework.dbutils import LocalDbutils
from framework.declarations import DatasetKind
from framework.errors import ConcurrentUpdateError, GraphError, PipelineError, UpdateError
from framework.events import EventLog
from framework.graph import PipelineGraph
from framework.loader import load_pipeline, pipeline_environment
from framework.paths import PathMapper
from framework.registry import normalize_name
from framework.runner.flows import FlowExecutor, FlowResult, clear_dataset, exception_text, timed_run
from framework.runner.proxy import SessionProxy, mapped_writer_paths
from framework.runner.resolve import UpdateContext, flow_kind_label, local_table_name
from framework.runner.session import get_or_create_session, session_conf
from framework.runner.sizing import small_update_reason
from framework.runner.summary import print_summary
from framework.settings import load_local_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from framework.spec import PipelineSpec

RETRYABLE_MARKERS = ("automatic retry: true",)  # Auto Loader's addNewColumns stop (schema already widened)


@dataclass(frozen=True)
class UpdateOptions:
    full_refresh: bool = False
    full_refresh_selection: tuple[str, ...] | None = None
    refresh_selection: tuple[str, ...] | None = None
    write_report: bool = False
    max_concurrent_flows: int = 4  # flows are mostly driver-side latency on small data; 4 overlap better than 2
    out: TextIO | None = None  # progress and summary (default stderr / stdout); None for default


@dataclass
class UpdateResult:
    update_id: str
    succeeded: bool
    flows: list[FlowResult]
    seconds: float
    storage: Path
    event_log: Path
    report: Path | None = None
    error: BaseException | None = None
    kinds: dict[str, str] = field(default_factory=dict)
    small_update: str | None = None  # why the small_updates settings applied (conf/spark.yaml); None if not

    def flow(self, name: str) -> FlowResult:
        return next(f for f in self.flows if f.flow.lower() == name.lower())


@contextmanager
def update_lock(storage: Path, update_id: str) -> Iterator[None]:
    """One update at a time per storage root: a second one fails fast. The OS releases the lock if the
    process dies, so a killed update never blocks the next one."""
    lock_path = storage / "system" / "update.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(lock_path, "a+")  # noqa: SIM115 - held for the whole update
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise ConcurrentUpdateError(
            f"another update is running on {storage} ({holder}); wait for it to finish or stop it") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"update {update_id}, pid {os.getpid()}, started {datetime.now(UTC).isoformat()}")
    handle.flush()
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def prepare_context(spec: PipelineSpec, spark: SparkSession, update_id: str) -> UpdateContext:
    configuration = dict(spec.configuration)
    configuration.setdefault("pipelines.id", spec.pipeline_id)
    configuration["pipelines.updateId"] = update_id
    ctx = UpdateContext(spark=spark, spec=spec, configuration=configuration,
                        mapper=PathMapper.from_spec(spec.paths, spec.root))
    ctx.update_time = datetime.now(UTC).replace(tzinfo=None)  # type: ignore[attr-defined]
    return ctx


def resolve_pipeline(spec: PipelineSpec, spark: SparkSession | None = None
                     ) -> tuple[UpdateContext, PipelineGraph]:
    """Load and resolve every query with Spark (no data is read or written); validate the graph."""
    spark = spark or get_or_create_session()
    ctx = prepare_context(spec, spark, "validate")
    proxy = SessionProxy(ctx)
    dbutils = LocalDbutils(ctx.mapper, spec.configuration, spec.root / ".secrets.env")
    ctx.loaded = load_pipeline(spec, spark=proxy, dbutils=dbutils)
    with pipeline_environment(proxy, dbutils):
        graph = ctx.resolve()
    check_rule_files(ctx, graph)
    return ctx, graph


def check_rule_files(ctx: UpdateContext, graph: PipelineGraph) -> None:
    """Validate every dataset's rule file (``expectations/<dataset>.yml``) against the schema the rules are
    applied to (the dataset's query output): unknown columns, bad SQL, types — all problems at once."""
    from framework.errors import Problem, RuleFileError
    from framework.quality.rules import find_rule_file, validate_rules

    problems: list[Problem] = []
    for key, dataset in graph.registry.datasets.items():
        df = ctx.stand_ins.get(key)
        if df is None or not dataset.expectations:
            continue
        try:
            path = find_rule_file(dataset.name)
        except PipelineError:
            continue
        try:
            validate_rules(path, schema=df.schema, spark=ctx.spark)
        except RuleFileError as exc:
            problems.extend(exc.problems)
    if problems:
        raise RuleFileError("the pipeline's rule files", problems)


def validate_with_spark(spec: PipelineSpec, spark: SparkSession | None = None) -> PipelineGraph:
    """Dry run (``medallion validate``): see :func:`resolve_pipeline`."""
    return resolve_pipeline(spec, spark)[1]


def run_update(spec: PipelineSpec, options: UpdateOptions | None = None,
               spark: SparkSession | None = None) -> UpdateResult:
    """Run one triggered update of ``spec``; never raises for flow failures (see ``UpdateResult``)."""
    options = options or UpdateOptions()
    out = options.out or sys.stderr
    started = time.perf_counter()
    update_id = str(uuid.uuid4())
    spark = spark or get_or_create_session()
    spec.storage.mkdir(parents=True, exist_ok=True)
    events = EventLog(str(spec.events_dir), spec.pipeline_id, spec.name, update_id)
    result = UpdateResult(update_id, False, [], 0.0, spec.storage, spec.events_dir)
    with update_lock(spec.storage, update_id):
        ctx = prepare_context(spec, spark, update_id)
        for key, value in spec.spark_conf.items():
            spark.conf.set(key, value)
        restore = ExitStack()  # the session's own pipelines.updateId comes back when the update ends
        restore.enter_context(session_conf(spark, {"pipelines.updateId": update_id}))
        proxy = SessionProxy(ctx)
        try:
            events.emit("create_update", f"Update {update_id[:8]} started.", details={
                "cause": "USER_ACTION", "full_refresh": options.full_refresh,
                "full_refresh_selection": list(options.full_refresh_selection or []),
                "refresh_selection": list(options.refresh_selection or []),
                "config": dict(spec.configuration), "development": spec.development})
            events.emit("update_progress", "Update is INITIALIZING.", details={"state": "INITIALIZING"})
            print(f"[{spec.name}] update {update_id[:8]}: loading {len(spec.libraries)} libraries", file=out)
            dbutils = LocalDbutils(ctx.mapper, spec.configuration, spec.root / ".secrets.env")
            loaded = load_pipeline(spec, spark=proxy, dbutils=dbutils)
            ctx.loaded = loaded
            events.hooks.extend(h.function for h in loaded.registry.event_hooks)
            with pipeline_environment(proxy, dbutils), mapped_writer_paths(ctx.mapper):
                graph = ctx.resolve()
                for key in graph.order:
                    flow = graph.registry.flows[key]
                    events.emit("flow_definition", f"Flow '{flow.name}' is defined as "
                                f"{flow_kind_label(flow, graph.kinds).upper()}.",
                                flow_name=flow.name, dataset_name=flow.target, details={
                                    "output_dataset": flow.target, "input_datasets": graph.inputs[key],
                                    "external_inputs": graph.external[key], "flow_type": flow.kind.value,
                                    "explain_text": None, "once": flow.once})
                events.emit("update_progress", "Update is RUNNING.", details={"state": "RUNNING"})
                selected = _selection(graph, options)
                _full_refresh(ctx, graph, options, selected)
                small = load_local_settings().small_updates
                tables = {spec.tables_dir, *(Path(ctx.table_path(k)) for k, d in graph.registry.datasets.items()
                                             if d.path)}
                result.small_update = small_update_reason(ctx.inputs, sorted(tables), small)
                # the spec's own spark_conf wins over the small-update settings
                small_conf = {k: v for k, v in small.spark_conf.items() if k not in spec.spark_conf}
                if result.small_update is not None:
                    print(f"  small update ({result.small_update}): {', '.join(sorted(small_conf))} "
                          "set for its flows", file=out)
                with session_conf(spark, small_conf if result.small_update else {}):
                    result.flows = _execute(ctx, graph, selected, events, options, out)
                _register_tables(ctx, graph, only_existing=True)
            result.kinds = {k: v.value for k, v in graph.kinds.items()}
            failed = [f for f in result.flows if f.status == "FAILED"]
            result.succeeded = not failed
            state = "COMPLETED" if not failed else "FAILED"
            events.emit("update_progress", f"Update {update_id[:8]} is {state}.",
                        level="INFO" if not failed else "ERROR", details={"state": state})
        except PipelineError as exc:
            result.error = exc
            events.emit("update_progress", f"Update {update_id[:8]} is FAILED.", level="ERROR", error=exc,
                        details={"state": "FAILED"})
            print(f"error: {exc}", file=out)
        finally:
            restore.close()
            result.seconds = time.perf_counter() - started
            try:
                events.flush(spark)
            except Exception as exc:
                print(f"warning: could not write the event log: {exc}", file=out)
    if options.write_report and result.flows:
        result.report = _write_report(spec, update_id, out)
    print_summary(spec, result, out=options.out or sys.stdout)
    return result


def _selection(graph: PipelineGraph, options: UpdateOptions) -> set[str]:
    """Flow keys to run: all, or those writing the selected datasets."""
    names = set(options.refresh_selection or ()) | set(options.full_refresh_selection or ())
    if not names:
        return set(graph.order)
    unknown = [n for n in names if normalize_name(n) not in graph.registry.datasets
               and normalize_name(n) not in graph.registry.sinks]
    if unknown:
        hints = "".join(graph.registry.did_you_mean(n) for n in unknown)
        raise UpdateError(f"unknown dataset(s) in the selection: {', '.join(unknown)}.{hints}",
                          code="UNKNOWN_SELECTION")
    wanted = {normalize_name(n) for n in names}
    return {k for k in graph.order if normalize_name(graph.registry.flows[k].target) in wanted}


def _full_refresh(ctx: UpdateContext, graph: PipelineGraph, options: UpdateOptions, selected: set[str]) -> None:
    if options.full_refresh:
        targets = {normalize_name(graph.registry.flows[k].target) for k in selected}
    else:
        targets = {normalize_name(n) for n in options.full_refresh_selection or ()}
    if targets:
        ctx.forget_resolved_sources()
    for key in targets:
        clear_dataset(ctx, key)


_REGISTERED: dict[tuple[int, str], str] = {}  # (session id, table) -> location registered by this process


def _register_tables(ctx: UpdateContext, graph: PipelineGraph, *, only_existing: bool) -> None:
    """Publish the pipeline's tables to the local catalog as ``<schema>.<name>`` (cheap when already done)."""
    spark = ctx.spark
    schema = ctx.spec.schema
    session = id(spark)
    for key, dataset in graph.registry.datasets.items():
        if graph.kinds[key] is DatasetKind.VIEW or dataset.private:
            continue
        path = ctx.table_path(key)
        table = local_table_name(f"{schema}.{dataset.name}")
        if _REGISTERED.get((session, table)) == path:
            continue
        if only_existing and not (Path(path) / "_delta_log").exists():
            continue
        if (session, f"schema:{schema}") not in _REGISTERED:
            spark.sql(f"CREATE DATABASE IF NOT EXISTS `{schema}`")
            _REGISTERED[(session, f"schema:{schema}")] = schema
        if spark.catalog.tableExists(f"{schema}.{dataset.name}"):
            current = _location(spark, table)
            if current is None or not current.rstrip("/").endswith(path.rstrip("/")):
                spark.sql(f"DROP TABLE IF EXISTS {table}")
        spark.sql(f"CREATE TABLE IF NOT EXISTS {table} USING DELTA LOCATION '{path}'")
        _REGISTERED[(session, table)] = path


def _location(spark: SparkSession, table: str) -> str | None:
    try:
        rows = spark.sql(f"DESCRIBE DETAIL {table}").select("location").collect()
        return str(rows[0][0]) if rows else None
    except Exception:
        return None


def _execute(ctx: UpdateContext, graph: PipelineGraph, selected: set[str], events: EventLog,
             options: UpdateOptions, out: TextIO) -> list[FlowResult]:
    """Run the selected flows, independent ones concurrently; a failed flow skips its dependants."""
    registry = graph.registry
    results: dict[str, FlowResult] = {}
    writers: dict[str, list[str]] = {}
    for key in graph.order:
        writers.setdefault(normalize_name(registry.flows[key].target), []).append(key)
    deps = {key: {w for d in _through_views(graph, graph.inputs[key]) for w in writers.get(d, [])
                  if w != key and w in selected} for key in graph.order}
    for key in graph.order:
        flow = registry.flows[key]
        results[key] = FlowResult(flow.name, flow.target, flow_kind_label(flow, graph.kinds))
        if key not in selected:
            results[key].status = "EXCLUDED"
            events.emit("flow_progress", f"Flow '{flow.name}' is EXCLUDED.", flow_name=flow.name,
                        dataset_name=flow.target, details={"status": "EXCLUDED"})
        elif graph.kinds.get(normalize_name(flow.target)) is DatasetKind.VIEW:
            results[key].status = "COMPLETED"  # views are computed where they are read
    pending = [k for k in graph.order if results[k].status == "QUEUED"]
    lock = threading.Lock()
    total = len(pending)
    done_count = 0

    def run_one(key: str) -> None:
        flow = registry.flows[key]
        result = results[key]
        result.status = "RUNNING"
        events.emit("flow_progress", f"Flow '{flow.name}' is RUNNING.", flow_name=flow.name,
                    dataset_name=flow.target, details={"status": "RUNNING"})
        attempt = 0
        while True:
            attempt += 1
            try:
                ctx.cloud_sources.pop(key, None)
                executor = FlowExecutor(ctx, graph, key)
                timed_run(executor, result)
                _clean_sources(ctx, key)
                return
            except Exception as exc:
                translated = _translate(exc)
                if attempt == 1 and any(m in exception_text(translated) for m in RETRYABLE_MARKERS):
                    print(f"  {flow.name}: {_short(translated)[:300]}; retrying with the new schema", file=out)
                    events.emit("flow_progress", f"Flow '{flow.name}' is RETRYING after a schema change.",
                                level="WARN", flow_name=flow.name, dataset_name=flow.target,
                                details={"status": "RETRYING"}, error=exc)
                    result.attempts = 2
                    continue
                if translated is not exc:
                    raise translated from exc
                raise

    def finish(key: str, error: BaseException | None) -> None:
        nonlocal done_count
        flow = registry.flows[key]
        result = results[key]
        with lock:
            done_count += 1
            position = done_count
        if error is None:
            details: dict[str, Any] = {"status": "COMPLETED", "metrics": result.metrics()}
            quality = result.data_quality()
            if quality is not None:
                details["data_quality"] = quality
            events.emit("flow_progress", f"Flow '{flow.name}' has COMPLETED.", level="METRICS"
                        if quality else "INFO", flow_name=flow.name, dataset_name=flow.target, details=details)
            rows = result.num_output_rows if result.num_output_rows is not None else result.num_upserted_rows
            extra = f", {result.dropped_records} dropped" if result.dropped_records else ""
            print(f"  [{position}/{total}] {flow.name:28s} COMPLETED  {rows if rows is not None else '-'} rows"
                  f"{extra}  {result.seconds:.1f}s", file=out)
        else:
            result.status = "FAILED"
            result.error = error
            events.emit("flow_progress", f"Flow '{flow.name}' has FAILED.", level="ERROR", flow_name=flow.name,
                        dataset_name=flow.target, error=error, details={"status": "FAILED"})
            print(f"  [{position}/{total}] {flow.name:28s} FAILED     {_short(error)}", file=out)

    def skip(key: str, because: str) -> None:
        flow = registry.flows[key]
        results[key].status = "SKIPPED"
        events.emit("flow_progress", f"Flow '{flow.name}' is SKIPPED because '{because}' failed.",
                    level="WARN", flow_name=flow.name, dataset_name=flow.target, details={"status": "SKIPPED"})
        print(f"  {'':7s} {flow.name:28s} SKIPPED    upstream '{because}' failed", file=out)

    remaining = list(pending)
    running: dict[Future[None], str] = {}
    with ThreadPoolExecutor(max_workers=max(1, options.max_concurrent_flows)) as pool:
        while remaining or running:
            for key in list(remaining):
                failed_dep = next((d for d in deps[key] if results[d].status in ("FAILED", "SKIPPED")), None)
                if failed_dep is not None:
                    remaining.remove(key)
                    skip(key, registry.flows[failed_dep].name)
                    continue
                if all(results[d].status in ("COMPLETED", "EXCLUDED") for d in deps[key]):
                    remaining.remove(key)
                    results[key].status = "STARTING"
                    print(f"  {'':7s} {registry.flows[key].name:28s} starting", file=out)
                    running[pool.submit(run_one, key)] = key
            if not running:
                break
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in done:
                key = running.pop(future)
                finish(key, future.exception())
    return [results[k] for k in graph.order]


def _translate(exc: BaseException) -> BaseException:
    """Auto Loader errors buried in a streaming failure's JVM causes, as the framework's own errors."""
    try:
        from framework.autoloader import translate_stream_error
    except ImportError:
        return exc
    translated = translate_stream_error(exc)
    return translated if translated is not None else exc


def _clean_sources(ctx: UpdateContext, key: str) -> None:
    """cleanSource (MOVE/DELETE) for the files a successful flow committed."""
    sources = ctx.cloud_sources.pop(key, [])
    if not sources:
        return
    from framework.autoloader import clean_source

    for path, options, checkpoint in sources:
        clean_source(path, options, checkpoint_location=checkpoint)


def _through_views(graph: PipelineGraph, datasets: list[str]) -> set[str]:
    """Views are computed inline where they are read, so a flow depends on what its views read."""
    out: set[str] = set()
    stack = list(datasets)
    while stack:
        name = stack.pop()
        if name in out:
            continue
        out.add(name)
        if graph.kinds.get(name) is DatasetKind.VIEW:
            stack.extend(graph.upstream_datasets(name))
    return out


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:300] if text else type(error).__name__


def _write_report(spec: PipelineSpec, update_id: str, out: TextIO) -> Path | None:
    try:
        from framework.runner.reporting import write_reports
    except ImportError:
        return None
    try:
        paths = write_reports(spec, update_id=update_id)
    except Exception as exc:
        print(f"warning: the data-quality report could not be written: {_short(exc)}", file=out)
        return None
    return next((p for p in paths if p.suffix == ".html"), None)


__all__ = ["GraphError", "UpdateOptions", "UpdateResult", "run_update", "validate_with_spark"]

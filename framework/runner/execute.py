"""Running the selected flows of an update: independent flows at the same time, a failed flow's dependants
skipped, a flow retried once when Auto Loader widened its schema. The scheduler decides, the listener tells,
the flow executor writes; this module only connects them."""

from __future__ import annotations

import itertools
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from framework.declarations import DatasetKind
from framework.errors import FlowError
from framework.failures import classify
from framework.registry import normalize_name
from framework.runner.flows import FlowExecutor, discard_failed_first_write, timed_run
from framework.runner.progress import FlowEvent, ProgressListener
from framework.runner.resolve import flow_kind_label
from framework.runner.results import FlowResult
from framework.runner.scheduler import COMPLETED, EXCLUDED, Scheduler
from framework.runner.streams import allow_starts, refuse_starts, stop_active_queries
from framework.runner.ticker import ticking
from framework.storage.log import committers_since, has_commit, latest_version
from framework.storage.policy import spark_reason

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from framework.graph import PipelineGraph
    from framework.runner.reads import ReadRouter, SourceKey


@dataclass
class _Outcome:
    """How one flow's run ended: ``error`` is the classified failure, or None."""

    key: str
    error: BaseException | None
    view_results: list[FlowResult]


class Execution:
    """One update's flow runs. ``prebuilt``: Auto Loader sources the resolution built that are still valid."""

    def __init__(self, router: ReadRouter, graph: PipelineGraph, selected: set[str], listener: ProgressListener,
                 *, max_concurrent: int = 4, prebuilt: dict[SourceKey, DataFrame] | None = None) -> None:
        self.router = router
        self.graph = graph
        self.listener = listener
        self.max_concurrent = max(1, max_concurrent)
        self.prebuilt = dict(prebuilt or {})
        self.events = flow_events(graph)
        self.results = {key: FlowResult(e.name, e.target, e.kind) for key, e in self.events.items()}
        initial = {key: EXCLUDED for key in graph.order if key not in selected}
        initial.update({key: COMPLETED for key in selected if self._is_view(key)})
        self.interrupted = False  # Ctrl-C stopped the run (the caller raises KeyboardInterrupt on)
        self.scheduler = Scheduler(graph.order, flow_dependencies(graph, selected, self._new_targets()), initial)

    def _new_targets(self) -> frozenset[str]:
        """The tables written by several flows that have no commit yet (see :func:`flow_dependencies`)."""
        registry = self.graph.registry
        counts: dict[str, int] = {}
        for flow in registry.flows.values():
            target = normalize_name(flow.target)
            counts[target] = counts.get(target, 0) + 1
        return frozenset(t for t, n in counts.items() if n > 1 and t in registry.datasets
                         and not has_commit(self.router.env.table_path(registry, t)))

    def _is_view(self, key: str) -> bool:
        return self.graph.kinds.get(normalize_name(self.graph.registry.flows[key].target)) is DatasetKind.VIEW

    def run(self) -> list[FlowResult]:
        """Run every selected flow; return every flow's result, in graph order."""
        for key, status in self.scheduler.status.items():
            self.results[key].status = status
            if status == EXCLUDED:
                self.listener.flow_excluded(self.events[key])
        running: dict[Future[_Outcome], str] = {}
        starts: dict[str, float] = {}  # flow name -> when it started, for the progress lines
        allow_starts()
        with ThreadPoolExecutor(max_workers=self.max_concurrent) as pool, \
                ticking(self.router.spark, self.listener, starts=starts):
            try:
                self._schedule(pool, running, starts)
            except KeyboardInterrupt:  # wherever it landed: the running flows return once their queries stopped
                self.interrupted = True
                self._interrupt(running)
        if self.interrupted:  # the flows it stopped, and one submitted as it landed (not yet in `running`)
            for key in {*running.values(), *(k for k, r in self.results.items() if r.status == "RUNNING")}:
                self.results[key].status = "CANCELED"
        return [self.results[k] for k in self.graph.order]

    def _schedule(self, pool: ThreadPoolExecutor, running: dict[Future[_Outcome], str],
                  starts: dict[str, float]) -> None:
        """Start every flow as soon as what it reads is written; return when none is left running."""
        total = self.scheduler.pending
        position = 0
        while True:
            for key, upstream in self.scheduler.skippable():
                self.results[key].status = "SKIPPED"
                self.listener.flow_skipped(self.events[key], self.events[upstream].name)
            for key in self.scheduler.ready():
                self.results[key].status = "RUNNING"
                self.listener.flow_starting(self.events[key])
                starts[self.events[key].name] = time.monotonic()
                running[pool.submit(self._run_flow, key)] = key
            if not running:
                return
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in done:
                running.pop(future)
                position += 1
                self._finish(future.result(), position, total)

    def _interrupt(self, running: dict[Future[_Outcome], str]) -> None:
        """Ctrl-C: stop every streaming query (a micro-batch in flight is rolled back by Spark, so nothing is
        half-committed), cancel what has not started, and let the running flows return."""
        refuse_starts()  # a flow about to start its query gets UPDATE_CANCELED instead
        for future in running:
            future.cancel()
        self.router.spark.sparkContext.cancelAllJobs()  # a materialized view's overwrite: the old version stays
        stop_active_queries(self.router.spark)

    def _run_flow(self, key: str) -> _Outcome:
        """Run one flow (twice at most); never raises: the failure is classified and returned. What each
        attempt committed (a failed streaming attempt's earlier micro-batches) adds up in the flow's result."""
        result = self.results[key]
        event = self.events[key]
        attempt = 0
        while True:
            attempt += 1
            executor = FlowExecutor(self.router, self.graph, key, self.prebuilt if attempt == 1 else {})
            path = executor.table_path
            if path is not None and attempt == 1:
                # a killed first write leaves a folder with no commit: no table, so nothing to keep (a declared
                # `path` keeps its folder and loses only the log)
                declared = executor.dataset is not None and executor.dataset.path is not None
                discard_failed_first_write(path, existed=declared)
            existed = path is not None and Path(path).exists()
            part = FlowResult(result.flow, result.target, result.kind)
            before = latest_version(path) if path is not None else None
            try:
                timed_run(executor, part)
            except Exception as exc:  # classified once, here
                _count_commits(part, path, before)
                error = classify_failure(executor, exc)
                if path is not None:
                    discard_failed_first_write(path, existed)
                result.add(part)
                if attempt == 1 and getattr(error, "retryable", False):
                    result.attempts = 2
                    self.listener.flow_retrying(event, retry_reason(error), error)
                    continue
                return _Outcome(key, error, [])
            _count_commits(part, path, before)
            result.add(part)
            result.status = part.status
            _clean_sources(executor)
            return _Outcome(key, None, executor.view_results)

    def _finish(self, outcome: _Outcome, position: int, total: int) -> None:
        result = self.results[outcome.key]
        event = self.events[outcome.key]
        self.scheduler.finish(outcome.key, ok=outcome.error is None)
        if outcome.error is None:
            self.listener.flow_completed(event, result, position, total)
            for view in outcome.view_results:
                self._view_checked(view)
            return
        result.status = "FAILED"
        result.error = outcome.error
        self.listener.flow_failed(event, result, outcome.error, position, total)

    def _view_checked(self, view: FlowResult) -> None:
        """A view's expectation counts from one read: reported as the view's flow progress, and added to the
        view's result for the summary."""
        key = normalize_name(view.flow)
        if key not in self.results:
            return
        self.listener.view_checked(self.events[key], view)
        self.results[key].add(view)


def flow_events(graph: PipelineGraph) -> dict[str, FlowEvent]:
    """Every flow of the graph as listeners see it, in graph order."""
    registry = graph.registry
    return {key: FlowEvent(flow, flow_kind_label(flow, graph.kinds,
                                                 sink=normalize_name(flow.target) in registry.sinks))
            for key in graph.order for flow in (registry.flows[key],)}


def retry_reason(error: BaseException) -> str:
    """Why a flow is retried, in one line: the new columns of a widened schema."""
    fields = getattr(error, "fields", None)
    if fields:
        return f"schema widened: new column(s) {', '.join(f'`{f}`' for f in fields)}"
    return "schema widened"


def flow_dependencies(graph: PipelineGraph, selected: set[str],
                      new_targets: frozenset[str] = frozenset()) -> dict[str, frozenset[str]]:
    """For each flow, the selected flows that write what it reads (through views, which are computed inline),
    and those it names in ``depends_on``.

    Flows into one of ``new_targets`` (tables that have no commit yet) also wait for the flow before them into
    the same table: two first writes to an empty folder conflict in Delta (both try to create the table)."""
    writers: dict[str, list[str]] = {}
    for key in graph.order:
        writers.setdefault(normalize_name(graph.registry.flows[key].target), []).append(key)
    deps = {key: {w for d in _through_views(graph, graph.inputs[key]) for w in writers.get(d, [])
                     if w != key and w in selected} for key in graph.order}
    for key in graph.order:  # depends_on: a scheduling edge to a flow it need not read from
        deps[key].update(k for k in map(normalize_name, graph.registry.flows[key].depends_on) if k in selected)
    for target in new_targets:
        chain = [k for k in writers.get(target, []) if k in selected]
        for before, after in itertools.pairwise(chain):
            deps[after].add(before)
    return {key: frozenset(d) for key, d in deps.items()}


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


def classify_failure(executor: FlowExecutor, exc: BaseException) -> BaseException:
    """The typed error of a failed flow run (see ``framework/failures.py``); Auto Loader's own errors (a
    vanished file, a repeated key) with their fix."""
    from framework.autoloader import translate_stream_error

    flow = executor.flow
    error = classify(exc, flow=flow.name, dataset=flow.target, file=flow.location.file, line=flow.location.line,
                     handler_error=executor.handler_errors.first)
    if isinstance(error, FlowError):
        return translate_stream_error(exc) or error
    return error


def _count_commits(part: FlowResult, path: str | None, before: int | None) -> None:
    """Which engine made each commit to the flow's target while the flow ran (the event log's flow progress
    reports it): the framework's driver writer or Spark's Delta. Two flows writing one target at once both see
    the other's commits too."""
    if path is not None:
        part.commits = committers_since(path, before)
        part.spark_commit_reason = spark_reason(path) if part.commits.get("spark") else None


def _clean_sources(executor: FlowExecutor) -> None:
    """Apply ``cleanSource`` (MOVE/DELETE) to the files a successful flow committed."""
    if not executor.reader.sources:
        return
    from framework.autoloader import clean_source

    for source in executor.reader.sources:
        clean_source(source.path, dict(source.options), checkpoint_location=source.checkpoint)

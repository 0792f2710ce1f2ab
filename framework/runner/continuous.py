"""Continuous mode: after a triggered pass has brought every table up to date, the update keeps running until it
is stopped, as a continuous Databricks pipeline does.

- Streaming flows (streaming tables, append flows, APPLY CHANGES, sinks) run as streaming queries with a
  processing-time trigger: ``pipelines.trigger.interval`` from the dataset's ``spark_conf`` or table
  properties, then the pipeline configuration, else Databricks' default of 5 seconds.
- A materialized view (and a REPLACE WHERE flow) is recomputed as soon as one of its inputs has a new Delta
  version (its inputs' logs are looked at every 0.1 s, without Spark), at most once per its interval (default
  1 minute), each view in a thread of its own (one view's recompute never waits for another's).
- A failing flow is retried with exponential backoff (events RETRYING); after ``pipelines.maxFlowRetryAttempts``
  (default 3) failures in a row it stops the update with its cause. The other flows keep running meanwhile.
- Every ``medallion.continuous.progressEventSeconds`` (default 60) each streaming flow that moved rows gets a
  ``flow_progress`` event (status RUNNING) with what its micro-batches did since the last one, so a run of
  hours shows in the event log as it goes, one event per flow per interval at most.
- :meth:`ContinuousRun.stop` ends it gracefully: each query's micro-batch in flight is given
  ``medallion.continuous.stopGraceSeconds`` (default 60) to commit before the query stops; a query stopped
  inside a batch rolls it back (Delta's sink and the checkpoint never disagree, and the next update reads it
  again). ``stop(grace_s=0)`` stops at once.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from framework.declarations import DatasetKind, FlowKind
from framework.quality.engine import metrics_from_row, sum_observed
from framework.registry import normalize_name
from framework.runner.flows import FlowExecutor, observation_name, timed_run
from framework.runner.ticker import ticking
from framework.storage.log import latest_version

if TYPE_CHECKING:
    from framework.graph import PipelineGraph
    from framework.runner.progress import FlowEvent, ProgressListener
    from framework.runner.reads import ReadRouter
    from framework.runner.results import FlowResult

INTERVAL_KEY = "pipelines.trigger.interval"
RETRIES_KEY = "pipelines.maxFlowRetryAttempts"
GRACE_KEY = "medallion.continuous.stopGraceSeconds"
EVENTS_KEY = "medallion.continuous.progressEventSeconds"
STREAMING_DEFAULT = "5 seconds"
BATCH_DEFAULT = "1 minute"
_UNITS = {"second": 1, "seconds": 1, "minute": 60, "minutes": 60, "hour": 3600, "hours": 3600, "ms": 0.001,
          "milliseconds": 0.001, "millisecond": 0.001}


def interval_seconds(text: str) -> float:
    """``"10 seconds"`` → 10.0 (Databricks' interval spelling: a number and a unit)."""
    number, _, unit = text.strip().partition(" ")
    return float(number) * _UNITS.get(unit.strip().lower() or "seconds", 1)


@dataclass
class _Flow:
    key: str
    event: FlowEvent
    result: FlowResult
    interval: str
    failures: int = 0
    thread: threading.Thread | None = None
    versions: dict[str, int] = field(default_factory=dict)  # materialized views: input table -> Delta version


class ContinuousRun:
    """The continuous phase of one update (see the module docstring)."""

    def __init__(self, router: ReadRouter, graph: PipelineGraph, selected: set[str], listener: ProgressListener,
                 events: dict[str, FlowEvent], results: dict[str, FlowResult]) -> None:
        self.router = router
        self.graph = graph
        self.listener = listener
        self.configuration = router.env.configuration
        self.max_failures = int(self.configuration.get(RETRIES_KEY, "3"))
        self.grace_s = float(self.configuration.get(GRACE_KEY, "60"))
        self.event_s = float(self.configuration.get(EVENTS_KEY, "60"))
        self._reported: dict[str, int] = {}  # flow key -> the last micro-batch a RUNNING event counted
        self._grace_s = 0.0  # a flow that kept failing stops the others at once; stop() sets the grace
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self.streams: list[_Flow] = []
        self.views: list[_Flow] = []
        for key in graph.order:
            if key not in selected or self._kind(key) is DatasetKind.VIEW:
                continue
            batch = self._is_batch(key)
            flow = _Flow(key, events[key], results[key], self._interval(key, batch))
            (self.views if batch else self.streams).append(flow)

    def _kind(self, key: str) -> DatasetKind | None:
        return self.graph.kinds.get(normalize_name(self.graph.registry.flows[key].target))

    def _is_batch(self, key: str) -> bool:
        flow = self.graph.registry.flows[key]
        # a REPLACE WHERE flow is a batch query into a streaming table: refreshed like a view (when an input
        # changed, at its interval), not started once as a stream
        if flow.once or flow.kind is FlowKind.AUTO_CDC_SNAPSHOT or flow.replace_where is not None:
            return True
        return self._kind(key) is DatasetKind.MATERIALIZED_VIEW

    def _interval(self, key: str, batch: bool) -> str:
        flow = self.graph.registry.flows[key]
        dataset = self.graph.registry.datasets.get(normalize_name(flow.target))
        for values in (flow.spark_conf, dataset.spark_conf if dataset else {},
                       dataset.table_properties if dataset else {}, self.configuration):
            if INTERVAL_KEY in values:
                return str(values[INTERVAL_KEY])
        return BATCH_DEFAULT if batch else STREAMING_DEFAULT

    def run(self) -> None:
        """Run until :meth:`stop` (or a flow that keeps failing); returns when every query has stopped."""
        for flow, work in [*((f, self._keep_running) for f in self.streams),
                           *((f, self._keep_refreshing) for f in self.views)]:
            flow.thread = threading.Thread(target=work, args=(flow,), daemon=True, name=f"medallion-{flow.key}")
            flow.thread.start()
        try:
            with ticking(self.router.spark, self.listener):
                self._loop()
            self._stop_queries(self._grace_s)
        except KeyboardInterrupt:  # a second Ctrl-C / SIGTERM: stop at once (a batch in flight is rolled back)
            self._stop.set()
            self.router.spark.sparkContext.cancelAllJobs()  # a view's overwrite: the old version stays
            self._stop_queries(0.0)
            raise
        finally:
            for flow in [*self.streams, *self.views]:
                while flow.thread is not None and flow.thread.is_alive():
                    flow.thread.join(1.0)
                    if flow.thread.is_alive() and flow in self.streams:
                        self._stop_queries(0.0)  # a retry that started its query while the others stopped

    def _loop(self) -> None:
        """Report the streams' progress every ``progressEventSeconds`` until the run stops."""
        next_event = time.monotonic() + self.event_s
        while not self._stop.wait(0.5):
            if time.monotonic() >= next_event:
                self._report_progress()
                next_event = time.monotonic() + self.event_s

    def _keep_refreshing(self, flow: _Flow) -> None:
        """Refresh one materialized view (or snapshot or once flow), in a thread of its own, as soon as an input
        changed (a look at the inputs' Delta logs every 0.1 s, no Spark), at most once per its interval, until
        the run stops. A view that reads no pipeline dataset, or an external table, refreshes on every interval
        instead: its inputs' changes cannot be seen."""
        flow.versions = self._versions(flow)  # what the triggered pass read
        next_refresh = time.monotonic() + interval_seconds(flow.interval) if self._blind(flow) else 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_refresh and self._refresh(flow):
                next_refresh = now + interval_seconds(flow.interval)
            self._stop.wait(0.1)

    def _report_progress(self) -> None:
        """A RUNNING ``flow_progress`` event per streaming flow whose micro-batches moved rows since the last."""
        by_name = {}
        for query in list(self.router.spark.streams.active):
            try:
                by_name[query.name] = query.recentProgress
            except Exception:  # the query ended between the listing and the read
                continue
        for flow in self.streams:
            name = self.graph.registry.flows[flow.key].name
            # batches that read rows (an idle query's progress carries the id its next batch will have)
            moved = [p for p in by_name.get(name) or []
                     if p.numInputRows and int(p.batchId) > self._reported.get(flow.key, -1)]
            if moved:
                self._reported[flow.key] = max(int(p.batchId) for p in moved)
                self.listener.flow_running(flow.event, _running_part(flow, moved))

    def stop(self, grace_s: float | None = None) -> None:
        """End the run: the thread in :meth:`run` gives each query's micro-batch in flight ``grace_s`` seconds
        (default: ``stopGraceSeconds``) to commit, stops every query and returns."""
        self._grace_s = self.grace_s if grace_s is None else grace_s
        self._stop.set()

    def _stop_queries(self, grace_s: float = 0.0) -> None:
        deadline = time.monotonic() + grace_s
        for query in list(self.router.spark.streams.active):
            try:
                while time.monotonic() < deadline and query.isActive and query.status["isTriggerActive"]:
                    time.sleep(0.05)
                query.stop()
            except Exception:  # a query that ended on its own meanwhile
                continue

    def _keep_running(self, flow: _Flow) -> None:
        """Run one streaming flow until the run stops; retry a failure with backoff."""
        while not self._stop.is_set():
            executor = FlowExecutor(self.router, self.graph, flow.key)
            executor.trigger = {"processingTime": flow.interval}
            part = _part(flow.result)
            try:
                timed_run(executor, part)
            except Exception as exc:  # classified by the caller's rules: retried, or it stops the update
                flow.result.add(part)
                if self._stop.is_set():
                    return
                if not self._failed(flow, exc, executor):
                    return
                continue
            flow.result.add(part)
            return  # stopped

    def _failed(self, flow: _Flow, exc: BaseException, executor: FlowExecutor) -> bool:
        """Record a failure; True when the flow is to be retried (after its backoff)."""
        from framework.runner.execute import classify_failure

        error = classify_failure(executor, exc)
        flow.failures += 1
        if flow.failures > self.max_failures:
            flow.result.status = "FAILED"
            flow.result.error = error
            self.error = error
            self.listener.flow_failed(flow.event, flow.result, error, 0, 0)
            self._stop.set()
            return False
        backoff = min(60.0, 2.0 ** (flow.failures - 1))
        self.listener.flow_retrying(flow.event, f"failed ({type(error).__name__}); retry {flow.failures} of "
                                    f"{self.max_failures} in {backoff:.0f}s", error)
        self._stop.wait(backoff)
        return True

    def _versions(self, flow: _Flow) -> dict[str, int]:
        """The newest Delta version of each pipeline dataset the flow reads (from the logs, no Spark)."""
        registry = self.graph.registry
        found = {name: latest_version(self.router.env.table_path(registry, name))
                 for name in self.graph.inputs.get(flow.key, [])}
        return {k: v for k, v in found.items() if v is not None}

    def _blind(self, flow: _Flow) -> bool:
        """True when the flow's input changes cannot be seen: it reads no pipeline dataset, or external tables."""
        return not self.graph.inputs.get(flow.key) or bool(self.graph.external.get(flow.key))

    def _refresh(self, flow: _Flow) -> bool:
        """Recompute a materialized view when one of its inputs changed since its last refresh (a blind one:
        always); True if it ran."""
        versions = self._versions(flow)
        if versions == flow.versions and not self._blind(flow):
            return False
        flow.versions = versions
        executor = FlowExecutor(self.router, self.graph, flow.key)
        part = _part(flow.result)
        try:
            timed_run(executor, part)
            self.listener.flow_completed(flow.event, part, 0, 0)
        except Exception as exc:  # retried on the next interval, counted like a streaming flow's failure
            self._failed(flow, exc, executor)
        flow.result.add(part)
        return True


def _running_part(flow: _Flow, progresses: list[Any]) -> FlowResult:
    """What a running flow's micro-batches ``progresses`` did: rows read, and (from the query's observed metrics)
    rows written, dropped by expectations and holding rescued data."""
    part = _part(flow.result)
    part.batches = len(progresses)
    part.num_input_rows = sum(int(p.numInputRows or 0) for p in progresses)
    name = observation_name(flow.key)
    observed = sum_observed([dict(p.observedMetrics[name].asDict()) for p in progresses
                             if p.observedMetrics.get(name)])
    if observed:
        quality = metrics_from_row(observed, (), flow.result.target)
        part.num_output_rows, part.dropped_records = quality.output_rows, quality.dropped_records
        part.num_rescued_rows = quality.rescued_records  # counted like the rows written (flows.py)
    return part


def _part(result: FlowResult) -> FlowResult:
    """An empty result for one more run of the flow; :meth:`FlowResult.add` adds it to the update's."""
    from framework.runner.results import FlowResult

    return FlowResult(result.flow, result.target, result.kind)

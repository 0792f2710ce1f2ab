"""What an update tells the world while it runs: one listener interface, two implementations.

The executor and the update call a :class:`ProgressListener`'s methods at each step; the event log
(:class:`EventLogListener`) and the console (:class:`ConsoleListener`) each turn them into their own output,
and :class:`Listeners` fans one call out to several.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from typing_extensions import override

from framework.errors import ExpectationViolation, FlowError

if TYPE_CHECKING:
    from framework.declarations import Flow
    from framework.events import EventLog
    from framework.graph import PipelineGraph
    from framework.runner.results import FlowResult


@dataclass(frozen=True)
class FlowEvent:
    """A flow, as listeners name it."""

    flow: Flow
    kind: str  # the summary's kind label (streaming_table, materialized_view, auto_cdc, sink, ...)

    @property
    def name(self) -> str:
        """The flow's name."""
        return self.flow.name

    @property
    def target(self) -> str:
        """The dataset or sink it writes."""
        return self.flow.target


class ProgressListener:
    """Receives an update's progress. Every method does nothing here; implementations override what they use."""

    def update_started(self, libraries: int, details: dict[str, Any]) -> None:
        """The update was created (before its libraries load)."""

    def graph_ready(self, graph: PipelineGraph, flows: Sequence[FlowEvent]) -> None:
        """Every flow was resolved and the graph validated; the flows will now run."""

    def note(self, text: str) -> None:
        """A line of information for people (small update settings, ...)."""

    def flow_excluded(self, flow: FlowEvent) -> None:
        """The flow is outside the update's selection."""

    def flow_starting(self, flow: FlowEvent) -> None:
        """The flow was handed to a worker."""

    def flow_retrying(self, flow: FlowEvent, reason: str, error: BaseException) -> None:
        """The flow failed in a way that a second attempt can fix (Auto Loader widened its schema)."""

    def flow_running(self, flow: FlowEvent, result: FlowResult) -> None:
        """A continuous flow's micro-batches since its last report (``result`` counts only them)."""

    def flow_completed(self, flow: FlowEvent, result: FlowResult, position: int, total: int) -> None:
        """The flow committed its output."""

    def flow_failed(self, flow: FlowEvent, result: FlowResult, error: BaseException, position: int,
                    total: int) -> None:
        """The flow failed; ``error`` is classified (see ``failures.py``)."""

    def flow_skipped(self, flow: FlowEvent, upstream: str) -> None:
        """The flow did not run because ``upstream`` failed or was skipped."""

    def view_checked(self, flow: FlowEvent, result: FlowResult) -> None:
        """A view's expectations were counted where a flow read it."""

    def update_finished(self, state: str, error: BaseException | None) -> None:
        """The update ended COMPLETED or FAILED (``error``: what failed it outside the flows)."""


class Listeners(ProgressListener):
    """Calls every listener in turn."""

    def __init__(self, *listeners: ProgressListener) -> None:
        self._listeners = listeners

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("_") or name not in ProgressListener.__dict__:
            return object.__getattribute__(self, name)
        listeners = object.__getattribute__(self, "_listeners")

        def fan_out(*args: Any, **kwargs: Any) -> None:
            for listener in listeners:
                getattr(listener, name)(*args, **kwargs)

        return fan_out


def describe(error: BaseException) -> str:
    """One line for people: the root cause, and where the query function is."""
    if isinstance(error, FlowError):
        where = f" ({error.file}:{error.line})" if error.file else ""
        return f"{error.root.headline()}{where}"
    text = [line for line in str(error).strip().splitlines() if line.strip()]
    return text[0][:500] if text else type(error).__name__


class ConsoleListener(ProgressListener):
    """Progress lines on a text stream (stderr by default)."""

    def __init__(self, name: str, update_id: str, out: TextIO) -> None:
        self._prefix = f"[{name}] update {update_id[:8]}"
        self._out = out

    def _print(self, text: str) -> None:
        print(text, file=self._out, flush=True)

    @override
    def update_started(self, libraries: int, details: dict[str, Any]) -> None:
        self._print(f"{self._prefix}: loading {libraries} libraries")

    @override
    def note(self, text: str) -> None:
        self._print(f"  {text}")

    @override
    def flow_starting(self, flow: FlowEvent) -> None:
        self._print(f"  {'':7s} {flow.name:28s} starting")

    @override
    def flow_retrying(self, flow: FlowEvent, reason: str, error: BaseException) -> None:
        self._print(f"  {'':7s} {flow.name:28s} {reason}; retrying")

    @override
    def flow_completed(self, flow: FlowEvent, result: FlowResult, position: int, total: int) -> None:
        rows = result.rows_out
        extra = f", {result.dropped_records} dropped" if result.dropped_records else ""
        self._print(f"  [{position}/{total}] {flow.name:28s} COMPLETED  {rows if rows is not None else '-'} rows"
                    f"{extra}  {result.seconds:.1f}s")

    @override
    def flow_failed(self, flow: FlowEvent, result: FlowResult, error: BaseException, position: int,
                    total: int) -> None:
        self._print(f"  [{position}/{total}] {flow.name:28s} FAILED     {describe(error)}")

    @override
    def flow_skipped(self, flow: FlowEvent, upstream: str) -> None:
        self._print(f"  {'':7s} {flow.name:28s} SKIPPED    upstream '{upstream}' failed")

    @override
    def update_finished(self, state: str, error: BaseException | None) -> None:
        """Nothing: the summary printed next says how the update ended and why (printed here too, a failure
        showed twice, one right after the other)."""


class EventLogListener(ProgressListener):
    """The event log's events (Databricks' event types and messages), committed as the update runs."""

    def __init__(self, events: EventLog, update_id: str) -> None:
        self._events = events
        self._short = update_id[:8]

    @override
    def update_started(self, libraries: int, details: dict[str, Any]) -> None:
        self._events.emit("create_update", f"Update {self._short} started.", details=details)
        self._events.emit("update_progress", "Update is INITIALIZING.", details={"state": "INITIALIZING"})
        self._events.commit_soon()

    @override
    def graph_ready(self, graph: PipelineGraph, flows: Sequence[FlowEvent]) -> None:
        from framework.registry import normalize_name

        for flow in flows:
            key = normalize_name(flow.name)
            self._events.emit("flow_definition", f"Flow '{flow.name}' is defined as {flow.kind.upper()}.",
                              flow_name=flow.name, dataset_name=flow.target, details={
                                  "output_dataset": flow.target, "input_datasets": graph.inputs[key],
                                  "external_inputs": graph.external[key], "flow_type": flow.flow.kind.value,
                                  "explain_text": None, "once": flow.flow.once})
        self._events.emit("update_progress", "Update is RUNNING.", details={"state": "RUNNING"})
        self._events.commit_soon()

    @override
    def flow_excluded(self, flow: FlowEvent) -> None:
        self._flow(flow, "EXCLUDED", f"Flow '{flow.name}' is EXCLUDED.")

    @override
    def flow_starting(self, flow: FlowEvent) -> None:
        self._flow(flow, "RUNNING", f"Flow '{flow.name}' is RUNNING.")

    @override
    def flow_retrying(self, flow: FlowEvent, reason: str, error: BaseException) -> None:
        self._flow(flow, "RETRYING", f"Flow '{flow.name}' is RETRYING: {reason}.", level="WARN")
        self._events.commit_soon()  # a continuous run may commit nothing else while its source is down

    @override
    def flow_running(self, flow: FlowEvent, result: FlowResult) -> None:
        details: dict[str, Any] = {"status": "RUNNING", "batches": result.batches, **self._progress(result)}
        self._events.emit("flow_progress", f"Flow '{flow.name}' is RUNNING: {result.batches} micro-batch(es) "
                          "since the last report.", flow_name=flow.name, dataset_name=flow.target, details=details)
        self._events.commit_soon()

    @override
    def flow_completed(self, flow: FlowEvent, result: FlowResult, position: int, total: int) -> None:
        if result.planning is not None:  # a materialized view's refresh technique (framework/incremental)
            self._events.emit("planning_information", f"Flow '{flow.name}' has been planned.",
                              flow_name=flow.name, dataset_name=flow.target, details=result.planning)
        self._metrics(flow, result, f"Flow '{flow.name}' has COMPLETED.")
        self._events.commit_soon()

    @override
    def view_checked(self, flow: FlowEvent, result: FlowResult) -> None:
        self._metrics(flow, result, f"Flow '{flow.name}' has COMPLETED.")

    @override
    def flow_failed(self, flow: FlowEvent, result: FlowResult, error: BaseException, position: int,
                    total: int) -> None:
        from framework.failures import cause_chain

        details: dict[str, Any] = {"status": "FAILED"}
        if result.batches:  # micro-batches committed before the failure: counted here, and never again
            details.update(self._progress(result))
        if isinstance(error, ExpectationViolation):  # as data, for the report: no metrics for the failed batch
            details["expectation_violation"] = {"dataset": error.dataset, "expectations": list(error.expectations),
                                                "record": error.record}
        self._events.emit("flow_progress", f"Flow '{flow.name}' has FAILED: {describe(error)}", level="ERROR",
                          flow_name=flow.name, dataset_name=flow.target, error=error, chain=cause_chain(error),
                          details=details)
        self._events.commit_soon()

    @override
    def flow_skipped(self, flow: FlowEvent, upstream: str) -> None:
        self._flow(flow, "SKIPPED", f"Flow '{flow.name}' is SKIPPED because '{upstream}' failed.", level="WARN")

    @override
    def update_finished(self, state: str, error: BaseException | None) -> None:
        level = "INFO" if state == "COMPLETED" else "ERROR"
        self._events.emit("update_progress", f"Update {self._short} is {state}.", level=level, error=error,
                          details={"state": state})

    def _flow(self, flow: FlowEvent, status: str, message: str, level: str = "INFO") -> None:
        self._events.emit("flow_progress", message, level=level, flow_name=flow.name, dataset_name=flow.target,
                          details={"status": status})

    def _metrics(self, flow: FlowEvent, result: FlowResult, message: str) -> None:
        details: dict[str, Any] = {"status": "COMPLETED", **self._progress(result)}
        self._events.emit("flow_progress", message, level="METRICS" if "data_quality" in details else "INFO",
                          flow_name=flow.name, dataset_name=flow.target, details=details)

    @staticmethod
    def _progress(result: FlowResult) -> dict[str, Any]:
        """The ``metrics`` and ``data_quality`` of a flow_progress event's details."""
        details: dict[str, Any] = {"metrics": result.metrics()}
        if result.sources:
            details["sources"] = result.sources
        if result.commits:  # which engine committed the flow's writes (framework/storage/log.py committers_since)
            details["commits"] = dict(result.commits)
        if result.spark_commit_reason:
            details["spark_commit_reason"] = result.spark_commit_reason
        quality = result.data_quality()
        if quality is not None:
            details["data_quality"] = quality
        return details

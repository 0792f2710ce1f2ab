"""The end-of-update summary: per flow its target, kind, status, rows written, dropped and rescued, expectation
results and time."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from framework.errors import PipelineError
from framework.redaction import redact
from framework.runner.progress import describe

if TYPE_CHECKING:
    from framework.runner.results import UpdateResult
    from framework.spec import PipelineSpec


def format_summary(spec: PipelineSpec, result: UpdateResult) -> str:
    """The summary of ``result`` as text: a line per flow, its expectations and its error, then where things are."""
    state = update_state(result)
    lines = [
        "",
        f"Update {result.update_id[:8]} of '{spec.name}': {state} in {result.seconds:.1f}s",
        f"{'flow':30s} {'target':28s} {'kind':18s} {'status':10s} {'rows':>9s} {'dropped':>8s} {'rescued':>8s} "
        f"{'time':>7s}",
        "-" * 125,
    ]
    for f in result.flows:
        rows = f.num_output_rows
        if f.num_upserted_rows is not None:
            rows = f.num_upserted_rows
        rows_text = "-" if rows is None else str(rows)
        if f.num_deleted_rows:
            rows_text += f" (-{f.num_deleted_rows})"
        lines.append(f"{f.flow[:30]:30s} {f.target[:28]:28s} {f.kind[:18]:18s} {f.status:10s} {rows_text:>9s} "
                     f"{f.dropped_records if f.dropped_records else '':>8} "
                     f"{f.num_rescued_rows if f.num_rescued_rows else '':>8} {f.seconds:6.1f}s")
        if f.planning is not None:
            lines.append(f"    refresh: {refresh_technique(f.planning)}")
        for e in f.expectations:
            total = e.passed_records + e.failed_records
            rate = 100.0 * e.passed_records / total if total else 100.0
            flag = "" if e.failed_records == 0 else ("  <- dropped" if e.action == "drop" else "  <- warned")
            lines.append(f"    expect {e.name} [{e.action}]: {e.passed_records} passed, {e.failed_records} failed "
                         f"({rate:.1f}% pass){flag}")
        if f.error is not None:
            lines.append(f"    error: {describe(f.error)[:400]}")
    if result.error is not None and state != "CANCELED":  # the state says it; the CLI prints "interrupted"
        lines.append(f"error: {result.error}")
    lines.append("")
    lines.append(f"tables:    {spec.tables_dir}  (catalog schema '{spec.schema}')")
    lines.append(f"event log: {spec.events_dir}")
    if result.report is not None:
        lines.append(f"report:    {result.report}")
    return "\n".join(lines)


def refresh_technique(planning: dict[str, Any]) -> str:
    """The technique a materialized view's refresh chose, from its planning_information details."""
    chosen = [t["maintenance_type"] for t in planning.get("technique_information", []) if t.get("is_chosen")]
    return (chosen[0] if chosen else "?").removeprefix("MAINTENANCE_TYPE_")


def update_state(result: UpdateResult) -> str:
    """The update's final state as its event log records it: COMPLETED, FAILED, or CANCELED when it was
    interrupted or stopped (``UPDATE_CANCELED``), failed flows or not."""
    if isinstance(result.error, PipelineError) and result.error.code == "UPDATE_CANCELED":
        return "CANCELED"
    return "COMPLETED" if result.succeeded else "FAILED"


def print_summary(spec: PipelineSpec, result: UpdateResult, out: TextIO) -> None:
    """Print the summary, with every secret read by the pipeline redacted."""
    print(redact(format_summary(spec, result)), file=out, flush=True)

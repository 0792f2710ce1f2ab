"""Write event logs with the runner's event shapes (create_update, flow_definition, flow_progress,
update_progress), so that reports are tested before and independently of the runner."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from framework.events import EventLog


@dataclass
class FlowRun:
    dataset: str
    output_rows: int
    expectations: list[tuple[str, int, int]] = field(default_factory=list)  # name, passed, failed
    dropped: int = 0
    status: str = "COMPLETED"
    inputs: list[str] = field(default_factory=list)
    extra_metrics: dict[str, int] = field(default_factory=dict)
    error: str | None = None


def write_update(spark, storage: Path, update_id: str, flows: list[FlowRun], *,  # type: ignore[no-untyped-def]
                 pipeline: str = "sample", full_refresh: bool = False) -> None:
    log = EventLog(str(storage / "system" / "events"), "pipeline-1", pipeline, update_id)
    log.emit("create_update", f"Update {update_id} started",
             details={"cause": "USER_ACTION", "full_refresh": full_refresh, "config": {}})
    for f in flows:
        log.emit("flow_definition", f"Flow {f.dataset} defined", flow_name=f.dataset, dataset_name=f.dataset,
                 details={"output_dataset": f.dataset, "input_datasets": f.inputs, "flow_type": "STREAMING",
                          "explain_text": ""})
    for status in ("QUEUED", "STARTING", "RUNNING"):
        for f in flows:
            log.emit("flow_progress", f"Flow {f.dataset} is {status}", flow_name=f.dataset,
                     dataset_name=f.dataset, details={"status": status})
    failed = False
    for f in flows:
        details: dict[str, Any] = {"status": f.status}
        if f.status == "COMPLETED":
            details["metrics"] = {"num_output_rows": f.output_rows, **f.extra_metrics}
            details["data_quality"] = {
                "dropped_records": f.dropped,
                "expectations": [{"name": n, "dataset": f.dataset, "passed_records": p, "failed_records": x}
                                 for n, p, x in f.expectations]}
        failed = failed or f.status == "FAILED"
        log.emit("flow_progress", f"Flow {f.dataset} is {f.status}", flow_name=f.dataset, dataset_name=f.dataset,
                 details=details, level="ERROR" if f.status == "FAILED" else "INFO",
                 error=RuntimeError(f.error) if f.error else None)
    state = "FAILED" if failed else "COMPLETED"
    log.emit("update_progress", f"Update {update_id} is {state}", details={"state": state})
    log.flush(spark)

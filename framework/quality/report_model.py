"""The data-quality report's model: per update and dataset, from event-log events. Pure Python, no Spark.

Events are the event log's rows as dicts (``event_type``, ``timestamp``, ``origin`` fields flattened as
``update_id``/``flow_name``/``dataset_name``/``pipeline_name``, ``details`` as the JSON string). Metrics of
every ``flow_progress`` event of a flow are summed, as Databricks' monitoring queries do (streaming flows report
per micro-batch); statuses keep the last one per flow.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from framework.quality.quarantine import QUARANTINE_SUFFIX

_STATUS_RANK = {
    "FAILED": 5,
    "RUNNING": 4,
    "STARTING": 3,
    "QUEUED": 3,
    "SKIPPED": 2,
    "EXCLUDED": 2,
    "COMPLETED": 1,
}


@dataclass
class RuleStats:
    """Pass/fail counts of one expectation on one dataset in one update."""

    name: str
    dataset: str
    passed: int = 0
    failed: int = 0
    action: str | None = None  # from the rule file, when one is found
    severity: str | None = None
    constraint: str | None = None
    description: str | None = None
    # an ``expect_or_fail`` rule that failed the flow: the violating record (JSON) as the FAILED event records
    # it; the failed micro-batch has no counts (nothing of it was committed), so ``failed`` does not include it
    violation: str | None = None

    @property
    def total(self) -> int:
        """Rows the expectation evaluated: passed plus failed."""
        return self.passed + self.failed

    @property
    def failure_rate(self) -> float:
        """Failed / evaluated (0.0 when nothing was evaluated)."""
        return self.failed / self.total if self.total else 0.0

    def to_json(self) -> dict[str, Any]:
        """The rule as the report's JSON shows it, with ``total`` and ``failure_rate`` (rounded to six
        decimals) added."""
        return asdict(self) | {"total": self.total, "failure_rate": round(self.failure_rate, 6)}


@dataclass
class DatasetStats:
    """What one update did to one dataset (summed over its flows)."""

    dataset: str
    flows: list[str] = field(default_factory=list)
    status: str = "UNKNOWN"
    rows_out: int = 0
    dropped: int = 0
    quarantined: int | None = None
    rescued: int | None = None
    upserted: int | None = None
    deleted: int | None = None
    input_rows: int | None = None  # reported by the flow, when it did
    error: str | None = None  # the first lines of the failure, when a flow failed
    note: str | None = None  # one line about a retry that succeeded (the RETRYING event's message)
    rules: list[RuleStats] = field(default_factory=list)

    @property
    def rows_in(self) -> int:
        """Rows that reached the expectations: reported input, else written + dropped."""
        return self.input_rows if self.input_rows is not None else self.rows_out + self.dropped

    @property
    def failing_rules(self) -> list[RuleStats]:
        """The dataset's rules that failed at least one row (counted, or a violation that failed the flow)."""
        return [r for r in self.rules if r.failed or r.violation is not None]

    def to_json(self) -> dict[str, Any]:
        """The dataset as the report's JSON shows it, with its rules and ``rows_in``."""
        out = asdict(self)
        out["rules"] = [r.to_json() for r in self.rules]
        out["rows_in"] = self.rows_in
        return out


@dataclass
class UpdateStats:
    """One pipeline update."""

    update_id: str
    pipeline_name: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    state: str = "UNKNOWN"
    full_refresh: bool | None = None
    datasets: list[DatasetStats] = field(default_factory=list)

    @property
    def rows_out(self) -> int:
        """Rows written, over the update's datasets (upserted rows for APPLY CHANGES targets)."""
        return sum(d.rows_out for d in self.datasets)

    @property
    def rows_in(self) -> int:
        """Rows that reached the expectations, over the update's datasets (see
        :attr:`DatasetStats.rows_in`)."""
        return sum(d.rows_in for d in self.datasets)

    @property
    def dropped(self) -> int:
        """Rows removed by ``drop`` expectations, over the update's datasets."""
        return sum(d.dropped for d in self.datasets)

    @property
    def quarantined(self) -> int:
        """Rows written to quarantine tables, over the update's datasets."""
        return sum(d.quarantined or 0 for d in self.datasets)

    @property
    def rescued(self) -> int:
        """Rescued records (flow metrics whose name contains ``rescued``), over the update's datasets."""
        return sum(d.rescued or 0 for d in self.datasets)

    @property
    def evaluated(self) -> int:
        """(row, rule) evaluations over the update's datasets: every rule's passed plus failed rows."""
        return sum(r.total for d in self.datasets for r in d.rules)

    @property
    def failed_checks(self) -> int:
        """(row, rule) evaluations that failed, over the update's datasets."""
        return sum(r.failed for d in self.datasets for r in d.rules)

    @property
    def pass_rate(self) -> float | None:
        """Share of (row, rule) evaluations that passed; None when no expectation ran."""
        return 1 - self.failed_checks / self.evaluated if self.evaluated else None

    def to_json(self) -> dict[str, Any]:
        """The update as the report's JSON shows it: its times, state, refresh mode, totals and datasets."""
        return {
            "update_id": self.update_id,
            "pipeline_name": self.pipeline_name,
            "started_at": _iso(self.started_at),
            "ended_at": _iso(self.ended_at),
            "state": self.state,
            "full_refresh": self.full_refresh,
            "totals": {
                "rows_in": self.rows_in,
                "rows_out": self.rows_out,
                "dropped": self.dropped,
                "quarantined": self.quarantined,
                "rescued": self.rescued,
                "evaluated": self.evaluated,
                "failed_checks": self.failed_checks,
                "pass_rate": self.pass_rate,
            },
            "datasets": [d.to_json() for d in self.datasets],
        }


@dataclass
class QuarantineSample:
    """Some quarantined rows of one dataset (values already turned into text, not yet escaped)."""

    dataset: str
    table: str
    columns: list[str]
    rows: list[list[str | None]]
    total: int
    failed_rules: list[list[str]] = field(default_factory=list)  # per row, the rules it failed

    def to_json(self) -> dict[str, Any]:
        """The sample as the report's JSON shows it."""
        return asdict(self)


@dataclass
class Report:
    """Everything the HTML and JSON reports show."""

    generated_at: datetime
    storage_root: str
    update: UpdateStats | None
    history: list[UpdateStats]  # oldest first, including ``update``
    samples: list[QuarantineSample] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The report's JSON document: the chosen update in full, one trend entry per update of the
        history, and the quarantine samples."""
        return {
            "generated_at": _iso(self.generated_at),
            "storage_root": self.storage_root,
            "update": self.update.to_json() if self.update else None,
            "trend": [
                {
                    "update_id": u.update_id,
                    "started_at": _iso(u.started_at),
                    "state": u.state,
                    "rows_in": u.rows_in,
                    "rows_out": u.rows_out,
                    "dropped": u.dropped,
                    "quarantined": u.quarantined,
                    "rescued": u.rescued,
                    "pass_rate": u.pass_rate,
                }
                for u in self.history
            ],
            "quarantine_samples": [s.to_json() for s in self.samples],
        }


def summarize(
    events: Iterable[Mapping[str, Any]], rule_info: Mapping[str, Mapping[str, Any]] | None = None
) -> list[UpdateStats]:
    """Aggregate event-log events into one :class:`UpdateStats` per update, oldest first.

    Args:
        events: event-log rows as dicts (see the module docstring).
        rule_info: optional ``{"<dataset>/<rule>": {"action", "severity", "constraint", "description"}}``
            from rule files, to show each rule's action next to its counts.
    """
    updates: dict[str, UpdateStats] = {}
    per_flow: dict[tuple[str, str], dict[str, Any]] = {}
    ordered = sorted(events, key=lambda e: (e.get("timestamp") or datetime.min, e.get("seq") or 0))
    for event in ordered:
        uid = event.get("update_id")
        if not uid:
            continue
        update = updates.setdefault(uid, UpdateStats(uid))
        update.pipeline_name = update.pipeline_name or event.get("pipeline_name")
        stamp = event.get("timestamp")
        if stamp is not None:
            update.started_at = min(update.started_at or stamp, stamp)
            update.ended_at = max(update.ended_at or stamp, stamp)
        kind = event.get("event_type")
        details = _details(event, kind)
        if kind == "create_update":
            refresh = details.get("full_refresh")
            update.full_refresh = bool(refresh) if refresh is not None else None
        elif kind == "update_progress":
            update.state = str(details.get("state") or update.state)
        elif kind == "flow_progress":
            flow = event.get("flow_name") or event.get("dataset_name") or "?"
            acc = per_flow.setdefault(
                (uid, flow),
                {
                    "dataset": event.get("dataset_name") or flow,
                    "metrics": {},
                    "dropped": 0,
                    "rules": {},
                    "status": None,
                    "error": None,
                    "note": None,
                    "violations": {},
                },
            )
            acc["dataset"] = event.get("dataset_name") or acc["dataset"]
            _accumulate(acc, details, event)
    for (uid, flow), acc in per_flow.items():
        update = updates[uid]
        stats = next((d for d in update.datasets if d.dataset == acc["dataset"]), None)
        if stats is None:
            stats = DatasetStats(acc["dataset"])
            update.datasets.append(stats)
        _merge_flow(stats, flow, acc, rule_info or {})
    for update in updates.values():
        _attach_quarantine(update)
        update.datasets.sort(key=lambda d: d.dataset)
    return sorted(updates.values(), key=lambda u: u.started_at or datetime.min)


def _details(event: Mapping[str, Any], kind: Any) -> dict[str, Any]:
    raw = event.get("details")
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else (raw or {})
    except json.JSONDecodeError:
        return {}
    inner = parsed.get(kind) if isinstance(parsed, dict) else None
    return inner if isinstance(inner, dict) else {}


def _accumulate(acc: dict[str, Any], details: Mapping[str, Any], event: Mapping[str, Any]) -> None:
    status = details.get("status")
    if status:
        acc["status"] = str(status)
    if status == "RETRYING":
        # a retry is one line from the event's message; its error (a stream failure's whole text) is not shown
        acc["note"] = first_line(event.get("message"))
    elif status == "FAILED" and (event.get("error_message") or event.get("message")):
        acc["error"] = first_lines(str(event.get("error_message") or event.get("message")))
    for key, value in (details.get("metrics") or {}).items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            acc["metrics"][key] = acc["metrics"].get(key, 0) + int(value)
    violation = details.get("expectation_violation")
    if status == "FAILED" and isinstance(violation, dict):  # an expect_or_fail rule stopped the flow
        dataset = str(violation.get("dataset") or acc["dataset"])
        for name in violation.get("expectations") or []:
            acc["violations"][(dataset, str(name))] = first_line(violation.get("record")) or ""
    quality = details.get("data_quality") or {}
    acc["dropped"] += int(quality.get("dropped_records") or 0)
    for key, value in quality.items():
        if "rescued" in key and isinstance(value, int | float):
            acc["metrics"][key] = acc["metrics"].get(key, 0) + int(value)
    for item in quality.get("expectations") or []:
        name = str(item.get("name"))
        dataset = str(item.get("dataset") or acc["dataset"])
        passed, failed = acc["rules"].get((dataset, name), (0, 0))
        acc["rules"][(dataset, name)] = (
            passed + int(item.get("passed_records") or 0),
            failed + int(item.get("failed_records") or 0),
        )


def _merge_flow(
    stats: DatasetStats, flow: str, acc: Mapping[str, Any], rule_info: Mapping[str, Mapping[str, Any]]
) -> None:
    stats.flows.append(flow)
    status = acc["status"] or "UNKNOWN"
    if _STATUS_RANK.get(status, 0) >= _STATUS_RANK.get(stats.status, 0):
        stats.status = status
    stats.error = stats.error or acc["error"]
    if acc.get("note") and status != "FAILED":
        stats.note = stats.note or acc["note"]
    metrics: Mapping[str, int] = acc["metrics"]
    # rows written, as the console summary counts them: an APPLY CHANGES flow reports upserted rows instead
    stats.rows_out += metrics["num_upserted_rows"] if "num_upserted_rows" in metrics else \
        metrics.get("num_output_rows", 0)
    stats.dropped += acc["dropped"]
    rescued = sum(v for k, v in metrics.items() if "rescued" in k)
    if any("rescued" in k for k in metrics):
        stats.rescued = (stats.rescued or 0) + rescued
    for key, attr in (
        ("num_upserted_rows", "upserted"),
        ("num_deleted_rows", "deleted"),
        ("num_input_rows", "input_rows"),
    ):
        if key in metrics:
            setattr(stats, attr, (getattr(stats, attr) or 0) + metrics[key])
    for (dataset, name), (passed, failed) in acc["rules"].items():
        rule = _rule(stats, dataset, name, rule_info)
        rule.passed += passed
        rule.failed += failed
    for (dataset, name), record in acc["violations"].items():
        rule = _rule(stats, dataset, name, rule_info)
        rule.action = rule.action or "fail"  # only expect_or_fail rules stop a flow
        rule.violation = record


def _rule(stats: DatasetStats, dataset: str, name: str, rule_info: Mapping[str, Mapping[str, Any]]) -> RuleStats:
    """The dataset's entry for the rule, added (with what ``rule_info`` knows of it) on first sight."""
    rule = next((r for r in stats.rules if r.name == name and r.dataset == dataset), None)
    if rule is None:
        info = rule_info.get(f"{dataset}/{name}", {})
        rule = RuleStats(
            name,
            dataset,
            action=info.get("action"),
            severity=info.get("severity"),
            constraint=info.get("constraint"),
            description=info.get("description"),
        )
        stats.rules.append(rule)
    return rule


def _attach_quarantine(update: UpdateStats) -> None:
    """Fold ``<dataset>_quarantine`` outputs into their dataset's ``quarantined`` count."""
    by_name = {d.dataset: d for d in update.datasets}
    for name, stats in list(by_name.items()):
        if name.endswith(QUARANTINE_SUFFIX) and name[: -len(QUARANTINE_SUFFIX)] in by_name:
            parent = by_name[name[: -len(QUARANTINE_SUFFIX)]]
            parent.quarantined = (parent.quarantined or 0) + stats.rows_out
            if stats.status == "FAILED":
                parent.status = "FAILED"
                parent.error = (
                    parent.error or f"quarantine table {name} failed: {stats.error or 'see event log'}"
                )
            update.datasets.remove(stats)


_MAX_LINE = 300
_MAX_LINES = 3


def first_line(text: object) -> str | None:
    """The first non-empty line of ``text``, at most 300 characters (None for no text)."""
    lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
    if not lines:
        return None
    return lines[0] if len(lines[0]) <= _MAX_LINE else lines[0][: _MAX_LINE - 1] + "…"


def first_lines(text: str) -> str:
    """The first three non-empty lines of an error, each at most 300 characters: the cause, not a stack trace."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    cut = [line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 1] + "…" for line in lines[:_MAX_LINES]]
    if len(lines) > _MAX_LINES:
        cut.append(f"… ({len(lines) - _MAX_LINES} more lines in the event log)")
    return "\n".join(cut)


def expectation_info(expectations: Mapping[str, Iterable[Any]]) -> dict[str, dict[str, Any]]:
    """``{"<dataset>/<rule>": {"action", "constraint"}}`` from the pipeline's declared expectations
    (``{dataset: [Expectation, ...]}``, decorators and rule files alike), for the report's ACTION column."""
    info: dict[str, dict[str, Any]] = {}
    for dataset, items in expectations.items():
        for expectation in items:
            info[f"{dataset}/{expectation.name}"] = {"action": expectation.action,
                                                     "constraint": expectation.constraint_sql}
    return info


def _iso(value: datetime | None) -> str | None:
    return value.isoformat(sep=" ", timespec="seconds") if value else None

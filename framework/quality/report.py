"""Data-quality reports from the event log: one self-contained HTML file and the same data as JSON.

``build_report(spark, storage_root)`` reads ``<storage>/system/events`` (the event log in Databricks' schema),
aggregates the last updates (rows in/out, dropped, quarantined, rescued, each rule's pass/fail counts), samples
failing rows from ``<storage>/tables/<dataset>_quarantine`` and writes ``dq_report.html`` + ``dq_report.json``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from framework.errors import PipelineError, RuleFileError
from framework.quality.quarantine import (
    FAILED_RULES_COLUMN,
    QUARANTINE_COLUMNS,
    QUARANTINE_SUFFIX,
    QUARANTINED_AT_COLUMN,
    UPDATE_ID_COLUMN,
)
from framework.quality.report_html import render_html
from framework.quality.report_model import QuarantineSample, Report, UpdateStats, expectation_info, summarize
from framework.quality.rules import load_rules
from framework.storage import state_files
from framework.storage.log import has_log
from framework.storage.url import StoragePath, storage_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from framework.declarations import Expectation

EVENTS_SUBPATH = "system/events"
TABLES_SUBPATH = "tables"
MAX_VALUE_CHARS = 300


@dataclass(frozen=True)
class ReportPaths:
    """Where :func:`build_report` wrote its files."""

    html: StoragePath
    json: StoragePath
    update_id: str | None


def build_report(
    spark: SparkSession,
    storage_root: str | os.PathLike[str] | StoragePath,
    update_id: str | None = None,
    out_dir: str | os.PathLike[str] | StoragePath | None = None,
    *,
    last_updates: int = 20,
    sample_rows: int = 10,
    with_rule_files: bool = True,
    expectations: Mapping[str, Iterable[Expectation]] | None = None,
) -> ReportPaths:
    """Write the data-quality report of one update (default: the latest) as HTML and JSON.

    Args:
        spark: the session used to read the event log and quarantine tables.
        storage_root: the pipeline's storage root (``<storage>/system/events``, ``<storage>/tables/...``).
        update_id: the update to detail; the trend chart covers the ``last_updates`` updates up to it.
        out_dir: output folder (default ``<storage>/reports``).
        last_updates: how many updates the trend shows.
        sample_rows: quarantined rows shown per dataset.
        with_rule_files: look up each dataset's rule file to show actions, severities and constraints.
        expectations: the pipeline's declared expectations per dataset (decorators and rule files), for each
            rule's action and constraint; they win over a rule file's (they are what ran).

    Returns:
        The paths of ``dq_report.html`` and ``dq_report.json`` and the update reported on.

    Raises:
        PipelineError: ``EVENT_LOG_NOT_FOUND`` when the storage root has no event log,
            ``UPDATE_NOT_FOUND`` when ``update_id`` is not in it.
    """
    report = collect_report(
        spark,
        storage_root,
        update_id,
        last_updates=last_updates,
        sample_rows=sample_rows,
        with_rule_files=with_rule_files,
        expectations=expectations,
    )
    out = storage_path(str(out_dir)) if out_dir is not None else storage_path(str(storage_root)) / "reports"
    html_path, json_path = out / "dq_report.html", out / "dq_report.json"
    state_files.write_text(str(html_path), render_html(report))  # local or on an object store
    state_files.write_text(str(json_path), json.dumps(report.to_json(), indent=2, default=str))
    return ReportPaths(html_path, json_path, report.update.update_id if report.update else None)


def collect_report(
    spark: SparkSession,
    storage_root: str | os.PathLike[str] | StoragePath,
    update_id: str | None = None,
    *,
    last_updates: int = 20,
    sample_rows: int = 10,
    with_rule_files: bool = True,
    expectations: Mapping[str, Iterable[Expectation]] | None = None,
) -> Report:
    """The report's model (see :func:`build_report`), without writing anything."""
    root = storage_path(str(storage_root))
    events_path = root / EVENTS_SUBPATH
    if not has_log(events_path):
        raise PipelineError(
            f"no event log at {events_path}: run an update first, or pass the pipeline's storage root",
            code="EVENT_LOG_NOT_FOUND",
        )
    events = read_events(spark, str(events_path), update_id, last_updates)
    rule_info = _rule_info(events) if with_rule_files else {}
    for key, declared in expectation_info(expectations or {}).items():
        rule_info[key] = {**rule_info.get(key, {}), **declared}
    history = summarize(events, rule_info)
    if update_id is not None and not any(u.update_id == update_id for u in history):
        raise PipelineError(
            f"update '{update_id}' is not in the event log at {events_path}", code="UPDATE_NOT_FOUND"
        )
    selected = next((u for u in history if u.update_id == update_id), history[-1] if history else None)
    if selected is not None:
        history = history[: history.index(selected) + 1][-last_updates:]
    samples = quarantine_samples(spark, root, selected, sample_rows) if selected else []
    return Report(datetime.now(UTC).replace(tzinfo=None), str(root), selected, history, samples)


def read_events(
    spark: SparkSession, path: str, update_id: str | None, last_updates: int
) -> list[dict[str, Any]]:
    """The events of the last ``last_updates`` updates (up to ``update_id``) as dicts, oldest first: read on the
    driver (``event_rows``), or through Delta when the log's files cannot be read that way."""
    from pyspark.sql import functions as F

    from framework.quality.event_rows import driver_events

    found = driver_events(path, update_id, last_updates)
    if found is not None:
        return found
    log = spark.read.format("delta").load(path)
    wanted = ["create_update", "update_progress", "flow_progress"]
    starts = (
        log.where(F.col("origin.update_id").isNotNull())
        .groupBy(F.col("origin.update_id").alias("update_id"))
        .agg(F.min("timestamp").alias("started"))
    )
    if update_id is not None:
        anchor = starts.where(F.col("update_id") == update_id).select("started").collect()
        if anchor:
            starts = starts.where(F.col("started") <= F.lit(anchor[0][0]))
    ids = [r.update_id for r in starts.orderBy(F.col("started").desc()).limit(last_updates).collect()]
    if not ids:
        return []
    rows = (
        log.where(F.col("event_type").isin(wanted) & F.col("origin.update_id").isin(ids))
        .select(
            "timestamp",
            "event_type",
            "details",
            F.col("origin.update_id").alias("update_id"),
            F.col("origin.flow_name").alias("flow_name"),
            F.col("origin.dataset_name").alias("dataset_name"),
            F.col("origin.pipeline_name").alias("pipeline_name"),
            F.col("sequence.control_plane_seq_no").alias("seq"),
            "message",
            F.col("error.exceptions")[0]["message"].alias("error_message"),
        )
        .collect()
    )
    return [r.asDict() for r in rows]


def _read_small(spark: SparkSession, path: str) -> DataFrame:
    """A table read from its live files when they allow it (no state reconstruction), else through Delta."""
    from framework.quality.event_rows import MAX_BYTES
    from framework.storage.plain import pinned_parquet

    pinned = pinned_parquet(spark, path, MAX_BYTES)
    return pinned if pinned is not None else spark.read.format("delta").load(path)


def quarantine_samples(
    spark: SparkSession, root: StoragePath, update: UpdateStats, limit: int
) -> list[QuarantineSample]:
    """Up to ``limit`` quarantined rows per dataset of ``update`` (its own rows when the table has them)."""
    from pyspark.sql import functions as F

    from framework.quality.event_rows import driver_count

    samples = []
    names = sorted({d.dataset for d in update.datasets} | _quarantine_tables(root))
    for dataset in names:
        table = root / TABLES_SUBPATH / f"{dataset}{QUARANTINE_SUFFIX}"
        if dataset.endswith(QUARANTINE_SUFFIX) or not has_log(table):
            continue
        total = driver_count(str(table), UPDATE_ID_COLUMN, update.update_id)
        if total == 0:
            continue  # known from the files' own column, without a Spark job
        df = _read_small(spark, str(table))
        if UPDATE_ID_COLUMN in df.columns:
            df = df.where(F.col(UPDATE_ID_COLUMN) == update.update_id)
        if QUARANTINED_AT_COLUMN in df.columns:
            df = df.orderBy(F.col(QUARANTINED_AT_COLUMN).desc())
        columns = [c for c in df.columns if c not in QUARANTINE_COLUMNS]
        failed = F.col(FAILED_RULES_COLUMN) if FAILED_RULES_COLUMN in df.columns else F.array()
        shown = df.select(
            failed.cast("array<string>").alias("__failed"),
            *[F.col(f"`{c}`").cast("string").alias(c) for c in columns],
        )
        rows = shown.limit(limit).collect()
        if not rows:
            continue
        if total is None:
            total = df.count()
        samples.append(
            QuarantineSample(
                dataset,
                str(table),
                columns,
                [[_clip(v) for v in list(r)[1:]] for r in rows],
                total,
                [list(r[0] or []) for r in rows],
            )
        )
    return samples


def _quarantine_tables(root: StoragePath) -> set[str]:
    names = state_files.names(str(root / TABLES_SUBPATH))
    return {name[: -len(QUARANTINE_SUFFIX)] for name in names if name.endswith(QUARANTINE_SUFFIX)}


def _rule_info(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    info: dict[str, dict[str, Any]] = {}
    datasets = {e.get("dataset_name") for e in events if e.get("dataset_name")}
    for dataset in sorted(d for d in datasets if d):
        for candidate in dict.fromkeys([dataset, dataset.split(".")[-1]]):
            try:
                ruleset = load_rules(candidate, check_sql=False)
            except RuleFileError:
                continue
            for rule in ruleset:
                info[f"{dataset}/{rule.name}"] = {
                    "action": rule.action,
                    "severity": rule.severity,
                    "constraint": rule.constraint_sql,
                    "description": rule.description,
                }
            break
    return info


def _clip(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    return (
        text
        if len(text) <= MAX_VALUE_CHARS
        else text[:MAX_VALUE_CHARS] + f"… (+{len(text) - MAX_VALUE_CHARS} chars)"
    )

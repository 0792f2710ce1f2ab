"""The expectations engine: every rule of a flow evaluated in one pass, inside Spark's JVM.

- warn rows are kept and counted; drop rows are filtered out and counted; fail rows stop the job through
  ``raise_error`` inside the plan, so nothing is committed (the Delta write and the checkpoint stay put).
- A row fails a rule when the constraint is not TRUE (NULL fails), as on Databricks.
- Counts come from one ``observe`` over the flow's input (no extra Spark job per rule).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from framework.declarations import Expectation
from framework.failures import VIOLATION_KEY


@dataclass(frozen=True)
class ExpectationResult:
    """The counts of one expectation on one dataset, for one batch or summed over batches (an entry of a
    flow_progress event's ``data_quality.expectations``).

    Attributes:
        name: The expectation's name.
        dataset: The dataset the flow writes.
        passed_records: Rows for which the constraint was TRUE.
        failed_records: Rows for which it was FALSE or NULL.
        action: ``warn``, ``drop`` or ``fail``.
    """

    name: str
    dataset: str
    passed_records: int
    failed_records: int
    action: str


@dataclass(frozen=True)
class QualityMetrics:
    """What a flow's expectations observed, for one batch or summed over batches.

    Attributes:
        input_rows: Rows that reached the expectations.
        output_rows: Rows kept (input minus dropped).
        dropped_records: Rows removed by ``drop`` expectations.
        expectations: Each expectation's counts, in declaration order.
        rescued_records: Rows that reached the expectations with a non-NULL rescued data column; None when the
            flow's rows were not counted for it (see :func:`apply_expectations`).
    """

    input_rows: int
    output_rows: int
    dropped_records: int
    expectations: tuple[ExpectationResult, ...]
    rescued_records: int | None = None

    def data_quality(self) -> dict[str, Any]:
        """The ``data_quality`` object of a flow_progress event."""
        return {
            "dropped_records": self.dropped_records,
            "expectations": [
                {
                    "name": e.name,
                    "dataset": e.dataset,
                    "passed_records": e.passed_records,
                    "failed_records": e.failed_records,
                }
                for e in self.expectations
            ],
        }


def passes(constraint: Column) -> Column:
    """TRUE only when a row passes ``constraint``: NULL fails a rule, as on Databricks. The one definition of
    passing, shared by the expectations applied here and the quarantine helpers (``quarantine.py``)."""
    return F.coalesce(constraint.cast("boolean"), F.lit(False))


def constraint_column(expectation: Expectation) -> Column:
    """The rule as a boolean Column that is TRUE only when the row passes (NULL → FALSE)."""
    raw = expectation.constraint
    return passes(F.expr(raw) if isinstance(raw, str) else raw)


RESCUED_METRIC = "rescued"


def _metric_name(i: int) -> str:
    return f"failed_{i}"


def apply_expectations(
    df: DataFrame,
    expectations: Sequence[Expectation],
    *,
    dataset: str,
    flow: str,
    observation_name: str | None = None,
    rescued_column: str | None = None,
) -> tuple[DataFrame, Any]:
    """Return (the DataFrame to write, the observation handle) for ``expectations`` on ``df``.

    The row count is always observed (``total``), so flows without expectations report their output rows too.
    With ``rescued_column`` (a column of ``df``), the rows whose rescued data is not NULL are observed too
    (``rescued``), in the same pass.

    For a batch DataFrame the handle is a ``pyspark.sql.Observation`` (read it with :func:`collect_metrics`
    after the write); for a streaming DataFrame it is the observation name, whose values appear in each
    micro-batch's progress (``observedMetrics``).
    """
    checks = [constraint_column(e) for e in expectations]
    aggregates = [F.count(F.lit(1)).alias("total")]
    aggregates += [F.sum(F.when(c, 0).otherwise(1)).alias(_metric_name(i)) for i, c in enumerate(checks)]
    if rescued_column is not None and rescued_column in df.columns:
        aggregates.append(F.count(F.col(f"`{rescued_column}`")).alias(RESCUED_METRIC))
    drop_checks = [c for c, e in zip(checks, expectations, strict=True) if e.action == "drop"]
    if drop_checks:
        all_drop = drop_checks[0]
        for c in drop_checks[1:]:
            all_drop = all_drop & c
        aggregates.append(F.sum(F.when(all_drop, 0).otherwise(1)).alias("dropped"))
    if df.isStreaming:
        handle: Any = observation_name or f"expectations_{flow}"
        out = df.observe(handle, *aggregates)
    else:
        from pyspark.sql import Observation

        handle = Observation(observation_name or f"expectations_{flow}")
        out = df.observe(handle, *aggregates)
    fail = [(c, e) for c, e in zip(checks, expectations, strict=True) if e.action == "fail"]
    if fail:
        out = out.where(_fail_guard(out, fail, dataset, flow))
    if drop_checks:
        out = out.where(all_drop)
    return out, handle


def _fail_guard(df: DataFrame, fail: Sequence[tuple[Column, Expectation]], dataset: str, flow: str) -> Column:
    """TRUE for rows that pass every fail rule; for any other row, Spark's ``raise_error`` with a JSON payload
    (flow, dataset, the violated rules, the record) that ``framework/failures.py`` reads back as data."""
    ok = fail[0][0]
    for c, _ in fail[1:]:
        ok = ok & c
    names = F.filter(F.array(*[F.when(~c, F.lit(e.name)) for c, e in fail]), lambda n: n.isNotNull())
    record = F.to_json(F.struct(*[F.col(f"`{n}`") for n in df.columns]), {"ignoreNullFields": "false"})
    payload = F.to_json(F.struct(
        F.lit("EXPECTATION_VIOLATION").alias(VIOLATION_KEY), F.lit(flow).alias("flow"),
        F.lit(dataset).alias("dataset"), names.alias("expectations"), record.alias("record")))
    return F.when(ok, F.lit(True)).otherwise(F.raise_error(payload).cast("boolean"))


def metrics_from_row(
    values: Mapping[str, Any] | None, expectations: Sequence[Expectation], dataset: str
) -> QualityMetrics:
    """Turn observed values (one batch, or summed over batches) into :class:`QualityMetrics`."""
    values = values or {}
    total = int(values.get("total") or 0)
    results = []
    for i, e in enumerate(expectations):
        failed = int(values.get(_metric_name(i)) or 0)
        results.append(ExpectationResult(e.name, dataset, total - failed, failed, e.action))
    dropped = int(values.get("dropped") or 0)
    rescued = int(values.get(RESCUED_METRIC) or 0) if RESCUED_METRIC in values else None
    return QualityMetrics(total, total - dropped, dropped, tuple(results), rescued)


def sum_observed(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Add up the observed metrics of several micro-batches."""
    out: dict[str, int] = {}
    for row in rows:
        for key, value in row.items():
            out[key] = out.get(key, 0) + int(value or 0)
    return out


def observation_name(key: str) -> str:
    """The name of the observed metrics (rows in, dropped, failed per expectation) of flow ``key``'s query."""
    return f"dq_{re.sub(r'[^A-Za-z0-9_]', '_', key)}"

"""Metrics of one APPLY CHANGES batch or one snapshot, as reported to the event log."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CdcMetrics:
    """What one batch (or snapshot) did to the target.

    Attributes:
        num_upserted_rows: target rows inserted or updated (SCD 2: version rows written, new or closed).
        num_deleted_rows: SCD 1: target rows deleted; SCD 2: delete events applied (versions closed or tombstoned).
        num_input_rows: source rows of the batch after ``where`` (0 when the batch was a replay and skipped).
        skipped: True when the batch had already been committed (replay after a crash) and nothing was written.
    """

    num_upserted_rows: int = 0
    num_deleted_rows: int = 0
    num_input_rows: int = 0
    skipped: bool = False

    def as_event_details(self) -> dict[str, int]:
        """The figures the event log's ``flow_progress.metrics`` carries for CDC flows."""
        return {"num_upserted_rows": self.num_upserted_rows, "num_deleted_rows": self.num_deleted_rows}

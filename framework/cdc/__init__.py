"""APPLY CHANGES (AUTO CDC, SCD type 1 and 2) and CDC from snapshots on Delta Lake.

Public API (used by the runner):

* ``ApplyChangesTarget(spark, spec, target_name, target_path, state_path, target_schema=None)`` with
  ``check_compatible()``, ``apply_batch(batch_df, batch_id, app_id) -> CdcMetrics`` and ``reset()``.
* ``SnapshotTarget(spark, spec, target_name, target_path, state_path, target_schema=None)`` with
  ``latest_version()``, ``apply_snapshot(snapshot_df, version) -> CdcMetrics``,
  ``run(resolve_source, update_time) -> list[CdcMetrics]`` and ``reset()``.
* ``CdcMetrics``: ``num_upserted_rows``, ``num_deleted_rows`` (+ input rows, skipped).

The input contract (NULL keys, NULL sequences, duplicate key+sequence) is documented in ``framework.cdc.events``.
"""

from framework.cdc.metrics import CdcMetrics
from framework.cdc.snapshot import SnapshotTarget
from framework.cdc.target import ApplyChangesTarget

__all__ = ["ApplyChangesTarget", "CdcMetrics", "SnapshotTarget"]

"""Which flows an update runs (``--select``), and what a full refresh clears (or truncates) before they run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from framework.declarations import DatasetKind
from framework.errors import UpdateError
from framework.registry import normalize_name
from framework.storage import state_files
from framework.storage.log import has_commit

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

    from framework.declarations import Dataset
    from framework.graph import PipelineGraph
    from framework.runner.environment import UpdateEnvironment


def select_flows(graph: PipelineGraph, names: Sequence[str]) -> set[str]:
    """The flow keys to run: every flow, or those writing the datasets (or sinks) named."""
    if not names:
        return set(graph.order)
    registry = graph.registry
    unknown = [n for n in names if normalize_name(n) not in registry.datasets and normalize_name(n) not in registry.sinks]
    if unknown:
        hints = "".join(registry.did_you_mean(n) for n in unknown)
        raise UpdateError(f"unknown dataset(s) in the selection: {', '.join(unknown)}.{hints}",
                          code="UNKNOWN_SELECTION")
    wanted = {normalize_name(n) for n in names}
    return {k for k in graph.order if normalize_name(registry.flows[k].target) in wanted}


def refresh_targets(graph: PipelineGraph, selected: set[str], *, full_refresh: bool,
                    full_refresh_selection: Sequence[str]) -> set[str]:
    """The datasets a full refresh clears: every selected flow's target, or the ones named."""
    if full_refresh:
        return {normalize_name(graph.registry.flows[k].target) for k in selected}
    return {normalize_name(n) for n in full_refresh_selection}


def clear_dataset(env: UpdateEnvironment, graph: PipelineGraph, key: str, output: StructType | None = None) -> None:
    """Full refresh of one dataset: every checkpoint of flows into it, its Auto Loader schemas and APPLY CHANGES
    state go, and its table starts again empty. Sinks keep their data (as on Databricks); only their flows'
    checkpoints go. The event log is not touched.

    Databricks' full refresh of a streaming table "truncates the streaming table, removes all checkpoint data,
    and restarts the streaming process with new checkpoints" (``ldp/full-refresh-st``), with "the latest
    definition of the streaming table" (``REFRESH ... FULL``): the table stays, with its history, so time travel
    to versions before the refresh still works. So a streaming table with commits is replaced in place (Delta's
    REPLACE TABLE: one commit that removes every file and sets the table's columns, layout and properties from
    the declaration, its columns from ``output``, the query's output as the resolution found it, unless a schema
    is declared); a materialized view is left for its recompute, an overwrite commit. An APPLY CHANGES or snapshot
    target and the Delta tables of its hidden state are truncated (one commit each) and marked, so that their
    writers treat them as new and their first write replaces them (``framework.cdc.storage``)."""
    from framework.cdc.storage import refresh_state, truncate_for_refresh

    registry = graph.registry
    cdc_state = str(env.cdc_state_path(key))
    for path in env.dataset_state(key):
        if str(path) == cdc_state:
            refresh_state(env.spark, str(path))  # its tables truncated, their history kept
        else:
            state_files.remove(str(path))
    if key not in registry.datasets:
        return
    table = env.table_path(registry, key)
    kind = graph.kinds.get(key)
    cdc = any(f.cdc is not None or f.snapshot_cdc is not None for f in registry.flows_into(key))
    if cdc and has_commit(table):
        truncate_for_refresh(env.spark, table)  # the CDC writer's first write replaces it (schema included)
        return
    if has_commit(table) and kind is DatasetKind.MATERIALIZED_VIEW:
        return  # the recompute overwrites it (replacing the schema where it changed) in one commit
    if has_commit(table) and not cdc and (output is not None or registry.datasets[key].schema is not None):
        replace_table(env.spark, table, registry.datasets[key], output)
    else:
        state_files.remove(table)


def replace_table(spark: SparkSession, path: str, dataset: Dataset, output: StructType | None,
                  *, create: bool = False) -> None:
    """Replace (or with ``create``, create when missing) the Delta table at ``path`` with ``dataset``'s declared
    layout: its declared schema (generated columns included) or ``output``'s columns made nullable (as a write
    creating the table would store them), partitioning, clustering, comment and table properties."""
    from framework.columns import declared_schema
    from framework.storage.plain import nullable

    columns = declared_schema(spark, dataset.schema)
    if columns is None:
        assert output is not None
        columns = nullable(output)
    build_table(spark, path, dataset, columns, replace=not create)


def build_table(spark: SparkSession, path: str, dataset: Dataset, columns: StructType, *, replace: bool) -> None:
    """Create the Delta table at ``path`` if missing or, with ``replace``, replace it (one commit, history kept)
    with ``columns`` and ``dataset``'s partitioning, clustering, comment and table properties."""
    from delta.tables import DeltaTable

    start = DeltaTable.replace if replace else DeltaTable.createIfNotExists  # createOrReplace refuses a new schema at a path
    builder = start(spark).location(path).addColumns(columns)
    if dataset.partition_cols:
        builder = builder.partitionedBy(*dataset.partition_cols)
    if dataset.cluster_by:
        builder = builder.clusterBy(*dataset.cluster_by)
    if dataset.comment:
        builder = builder.comment(dataset.comment)
    for name, value in dataset.table_properties.items():
        builder = builder.property(name, str(value))
    builder.execute()

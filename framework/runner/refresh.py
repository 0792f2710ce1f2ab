"""Which flows an update runs (``--select``), and what a full refresh clears before they run."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from framework.errors import UpdateError
from framework.registry import normalize_name

if TYPE_CHECKING:
    from framework.graph import PipelineGraph
    from framework.registry import Registry
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


def clear_dataset(env: UpdateEnvironment, registry: Registry, key: str) -> None:
    """Full refresh of one dataset: its data, every checkpoint of flows into it, its Auto Loader schemas and
    APPLY CHANGES state. Sinks keep their data (as on Databricks); only their flows' checkpoints go."""
    paths = env.dataset_state(key)
    if key in registry.datasets:
        paths.append(Path(env.table_path(registry, key)))
    for path in paths:
        if path.exists():
            shutil.rmtree(path)

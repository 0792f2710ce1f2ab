"""What a refresh leaves alone: the reset-checkpoints refresh, and tables whose ``pipelines.reset.allowed`` is
``false``.

Databricks' "reset streaming flow checkpoints" update (``reset_checkpoint_selection`` of the start-update
API; ``--reset-checkpoint-select`` here) keeps every table's data and clears the named streaming flows'
checkpoints, so those flows read their sources again from the start (appending what they read again, as on
Databricks). A table with ``pipelines.reset.allowed = false`` keeps its data and checkpoints through a full
refresh (the refresh does not reach it); its flows go on incrementally.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from framework.errors import UpdateError
from framework.registry import normalize_name

if TYPE_CHECKING:
    from framework.graph import PipelineGraph
    from framework.runner.environment import UpdateEnvironment

RESET_ALLOWED = "pipelines.reset.allowed"


def resettable(graph: PipelineGraph, keys: Iterable[str]) -> set[str]:
    """``keys`` without the datasets whose ``pipelines.reset.allowed`` table property is ``false``."""
    datasets = graph.registry.datasets
    return {k for k in keys if k not in datasets
            or str(datasets[k].table_properties.get(RESET_ALLOWED, "true")).strip().lower() != "false"}


def reset_checkpoints(env: UpdateEnvironment, graph: PipelineGraph, flow_names: Sequence[str]) -> list[str]:
    """Clear the checkpoints of the streaming flows named (their data stays); return the flows reset.
    Raises UpdateError (UNKNOWN_SELECTION) naming the flows the pipeline does not have."""
    if not flow_names:
        return []
    flows = graph.registry.flows
    unknown = [n for n in flow_names if normalize_name(n) not in flows]
    if unknown:
        raise UpdateError(f"unknown flow(s) in the checkpoint reset selection: {', '.join(unknown)} (flows: "
                          f"{', '.join(sorted(f.name for f in flows.values()))})", code="UNKNOWN_SELECTION")
    reset = []
    for name in flow_names:
        flow = flows[normalize_name(name)]
        checkpoint = Path(env.checkpoint_path(flow))
        if checkpoint.exists():
            shutil.rmtree(checkpoint)
        reset.append(flow.name)
    return reset

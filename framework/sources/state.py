"""Where every streaming flow's sources stand, read straight from the checkpoints (no Spark): the last
committed micro-batch's end offset per source, described by kind.

A checkpoint (``<storage>/checkpoints/<table>/<flow>``) holds ``offsets/<batch>`` (written before a batch
runs: a ``v1`` line, the batch's metadata, then one line per source, ``-`` for none) and ``commits/<batch>``
(written after the sink committed it). The last batch with both is where a restart resumes; a batch with an
offset file and no commit was interrupted and runs again with the same bounds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class SourcePosition:
    """One source of one flow: its index in the query, its kind, and what its offset says."""

    index: int
    kind: str
    position: str
    offset: Any


@dataclass(frozen=True)
class FlowState:
    """A streaming flow's checkpoint: the last committed batch, a pending one, and its sources' positions."""

    table: str
    flow: str
    checkpoint: Path
    committed_batch: int | None
    pending_batch: int | None
    sources: tuple[SourcePosition, ...]


def _batches(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())


def read_offsets(path: Path) -> list[Any]:
    """The per-source offsets of one ``offsets/<batch>`` file (None for a source without one)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Any] = []
    for line in lines[2:]:
        if line.strip() in ("", "-"):
            out.append(None)
            continue
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append(line.strip())
    return out


def describe_offset(offset: Any, checkpoint: Path, index: int) -> tuple[str, str]:
    """The kind of a source and its position in words, from its offset's shape."""
    if offset is None:
        return "unknown", "no offset"
    if isinstance(offset, dict) and "watermark" in offset:
        nulls = int(offset.get("nullRows") or 0)
        extra = f", {nulls} row(s) without a watermark not read" if nulls else ""
        waiting = sum(len(g.get("xids") or []) for g in offset.get("inFlight") or [])
        if waiting:
            extra += f", {waiting} transaction(s) in flight at the last read, their rows read when they end"
        return "jdbc_incremental", f"watermark {offset['watermark']!r}{extra}"
    if isinstance(offset, dict) and "reservoirVersion" in offset:
        return "delta", f"Delta version {offset['reservoirVersion']} (index {offset.get('index')})"
    if isinstance(offset, dict) and "logOffset" in offset:
        seen = files_seen(checkpoint / "sources" / str(index))
        return "files", f"{seen} file(s) seen (log offset {offset['logOffset']})"
    return "other", json.dumps(offset, sort_keys=True)[:300]


def files_seen(log: Path) -> int:
    """How many files a file source's metadata log (``sources/<n>``, compacted or not) lists."""
    if not log.is_dir():
        return 0
    entries = sorted(log.iterdir(), key=lambda p: int(p.name.split(".")[0]) if p.name.split(".")[0].isdigit() else -1)
    compacts = [p for p in entries if p.name.endswith(".compact")]
    start = compacts[-1] if compacts else None
    files = [p for p in entries if p.name.split(".")[0].isdigit()]
    if start is not None:
        files = [start, *[p for p in files if int(p.name.split(".")[0]) > int(start.name.split(".")[0])]]
    return sum(max(len(p.read_text(encoding="utf-8").splitlines()) - 1, 0) for p in files)


def flow_state(checkpoint: Path, table: str, flow: str) -> FlowState:
    """The state of one checkpoint folder."""
    committed = _batches(checkpoint / "commits")
    offsets = _batches(checkpoint / "offsets")
    last = committed[-1] if committed else None
    pending = offsets[-1] if offsets and (last is None or offsets[-1] > last) else None
    sources: list[SourcePosition] = []
    if last is not None and (checkpoint / "offsets" / str(last)).exists():
        for index, offset in enumerate(read_offsets(checkpoint / "offsets" / str(last))):
            kind, position = describe_offset(offset, checkpoint, index)
            sources.append(SourcePosition(index, kind, position, offset))
    return FlowState(table, flow, checkpoint, last, pending, tuple(sources))


def pipeline_state(checkpoints_dir: Path) -> list[FlowState]:
    """Every flow checkpoint under ``<storage>/checkpoints`` (``<table>/<flow>``), sorted by name."""
    states: list[FlowState] = []
    if not checkpoints_dir.is_dir():
        return states
    for table in sorted(p for p in checkpoints_dir.iterdir() if p.is_dir()):
        for flow in sorted(p for p in table.iterdir() if p.is_dir()):
            if (flow / "offsets").is_dir():
                states.append(flow_state(flow, table.name, flow.name))
    return states


def render_state(states: list[FlowState]) -> str:
    """The states as text, one block per flow."""
    if not states:
        return "no streaming flow has a checkpoint yet (run an update first)"
    lines = []
    for state in states:
        batch = "no batch committed" if state.committed_batch is None else f"batch {state.committed_batch}"
        pending = f"; batch {state.pending_batch} started, not committed" if state.pending_batch is not None else ""
        lines.append(f"{state.table} / {state.flow}: {batch}{pending}")
        lines += [f"  source {s.index} ({s.kind}): {s.position}" for s in state.sources]
    return "\n".join(lines)

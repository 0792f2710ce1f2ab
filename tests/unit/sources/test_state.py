"""`medallion state`: source positions read from checkpoint files (Spark's offset log format), no Spark."""

from __future__ import annotations

import json
from pathlib import Path

from framework.cli import main
from framework.sources.state import pipeline_state, render_state


def _offsets(folder: Path, batch: int, *sources: object) -> None:
    (folder / "offsets").mkdir(parents=True, exist_ok=True)
    lines = ["v1", json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 1})]
    lines += ["-" if s is None else json.dumps(s) for s in sources]
    (folder / "offsets" / str(batch)).write_text("\n".join(lines))


def _commit(folder: Path, batch: int) -> None:
    (folder / "commits").mkdir(parents=True, exist_ok=True)
    (folder / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def _checkpoints(root: Path) -> Path:
    cp = root / "storage" / "checkpoints"
    jdbc = cp / "orders_bronze" / "orders_bronze"
    _offsets(jdbc, 0, {"watermark": "2024-01-01 05:00:00+00", "nullRows": 2})
    _commit(jdbc, 0)
    _offsets(jdbc, 1, {"watermark": "2024-01-02 00:00:00+00", "nullRows": 2})  # started, never committed
    files = cp / "raw" / "raw"
    _offsets(files, 0, {"logOffset": 1})
    _commit(files, 0)
    (files / "sources" / "0").mkdir(parents=True)
    (files / "sources" / "0" / "0").write_text('v1\n{"path":"a"}\n{"path":"b"}')
    (files / "sources" / "0" / "1").write_text('v1\n{"path":"c"}')
    delta = cp / "silver" / "silver"
    _offsets(delta, 3, {"sourceVersion": 1, "reservoirId": "x", "reservoirVersion": 7, "index": -1,
                        "isStartingVersion": False})
    _commit(delta, 3)
    return cp


def test_positions_by_source_kind(tmp_path: Path) -> None:
    states = {s.table: s for s in pipeline_state(_checkpoints(tmp_path))}
    jdbc = states["orders_bronze"]
    assert (jdbc.committed_batch, jdbc.pending_batch) == (0, 1)
    assert jdbc.sources[0].kind == "jdbc_incremental"
    assert jdbc.sources[0].offset["watermark"] == "2024-01-01 05:00:00+00"  # the committed one, not the pending
    assert states["raw"].sources[0].position.startswith("3 file(s) seen")
    assert states["silver"].sources[0].position.startswith("Delta version 7")
    text = render_state(list(states.values()))
    assert "batch 1 started, not committed" in text and "2 row(s) without a watermark" in text


def test_cli_state_prints_positions(tmp_path: Path, capsys: object) -> None:
    _checkpoints(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: p\nlibraries: [{glob: {include: none/**}}]\nstorage: storage\n")
    assert main(["state", str(spec)]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "orders_bronze / orders_bronze: batch 0" in out and "Delta version 7" in out


def test_no_checkpoint_yet(tmp_path: Path) -> None:
    assert "no streaming flow" in render_state(pipeline_state(tmp_path / "nothing"))

"""cloudFiles.allowOverwrites: changed files are removed from a checkpoint's file-source log (Spark's format)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from framework.autoloader.checkpoint import forget_rewritten, logged_files_in
from framework.errors import AutoLoaderError


def _log(path: Path, *entries: tuple[Path, int, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["v1"] + [json.dumps({"path": f.as_uri(), "timestamp": ts, "batchId": b}) for f, ts, b in entries]
    path.write_text("\n".join(lines), encoding="utf-8")
    path.with_name(f".{path.name}.crc").write_bytes(b"crc")


def _file(root: Path, name: str, mtime_ms: int) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}\n", encoding="utf-8")
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return path


def test_only_files_changed_after_a_committed_batch_are_forgotten(tmp_path: Path) -> None:
    root, ckpt = tmp_path / "landing", tmp_path / "checkpoint"
    same = _file(root, "same.json", 1_000)
    changed = _file(root, "changed.json", 5_000)  # logged at 2_000 in committed batch 0
    pending = _file(root, "pending.json", 9_000)  # logged at 3_000 in batch 1, not committed: Spark replays it
    gone = root / "gone.json"
    log0 = ckpt / "sources" / "0" / "0"
    _log(log0, (same, 1_000, 0), (changed, 2_000, 0), (gone, 1_000, 0))
    _log(ckpt / "sources" / "0" / "1", (pending, 3_000, 1))
    _log(ckpt / "sources" / "0" / "1.compact", (same, 1_000, 0), (changed, 2_000, 0), (gone, 1_000, 0),
         (pending, 3_000, 1))
    (ckpt / "commits").mkdir(parents=True)
    (ckpt / "commits" / "0").write_text("v1\n{}", encoding="utf-8")

    assert forget_rewritten(ckpt, root) == [changed]
    remaining = {(e.path.name, e.batch_id) for e in logged_files_in(ckpt / "sources" / "0", root)}
    assert remaining == {("same.json", 0), ("gone.json", 0), ("pending.json", 1)}
    assert log0.read_text(encoding="utf-8").startswith("v1\n") and not log0.read_text(encoding="utf-8").endswith("\n")
    assert not log0.with_name(".0.crc").exists()  # a stale checksum would fail Spark's read
    assert (ckpt / "sources" / "0" / ".1.crc").exists()  # untouched file keeps its checksum
    assert forget_rewritten(ckpt, root) == []  # idempotent


def test_a_file_logged_again_later_is_judged_by_its_latest_entry(tmp_path: Path) -> None:
    root, ckpt = tmp_path / "landing", tmp_path / "checkpoint"
    f = _file(root, "f.json", 4_000)
    _log(ckpt / "sources" / "0" / "0", (f, 1_000, 0))
    _log(ckpt / "sources" / "0" / "1", (f, 4_000, 1))  # ingested again with its current time
    (ckpt / "commits").mkdir(parents=True)
    for b in ("0", "1"):
        (ckpt / "commits" / b).write_text("v1\n{}", encoding="utf-8")
    assert forget_rewritten(ckpt, root) == []
    assert forget_rewritten(tmp_path / "no-checkpoint", root) == []


def test_a_damaged_log_line_names_the_file_and_line(tmp_path: Path) -> None:
    root, ckpt = tmp_path / "landing", tmp_path / "checkpoint"
    log = ckpt / "sources" / "0" / "0"
    _log(log, (_file(root, "a.json", 1_000), 1_000, 0))
    log.write_text(log.read_text(encoding="utf-8") + "\n{not json", encoding="utf-8")
    with pytest.raises(AutoLoaderError, match=r"checkpoint file .*/sources/0/0, line 3, is not a file-source log"):
        forget_rewritten(ckpt, root)

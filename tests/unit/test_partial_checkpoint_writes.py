"""What a killed update leaves half-written in a streaming checkpoint's logs is removed before a query starts;
committed entries stay."""

from __future__ import annotations

from pathlib import Path

from framework.runner.streams import clear_partial_writes


def test_temporary_log_files_go_and_entries_stay(tmp_path: Path) -> None:
    offsets, commits = tmp_path / "offsets", tmp_path / "commits"
    offsets.mkdir()
    commits.mkdir()
    kept = [offsets / "0", offsets / ".0.crc", commits / "0", tmp_path / "metadata"]
    partial = [offsets / ".1.216a328c-c7b2-4345-8d1b-b34eaf02f395.tmp",
               offsets / "..1.216a328c-c7b2-4345-8d1b-b34eaf02f395.tmp.crc",
               commits / ".1.0d4f.tmp"]
    for path in [*kept, *partial]:
        path.write_text("x")
    assert sorted(clear_partial_writes(tmp_path)) == sorted(partial)
    assert all(p.exists() for p in kept) and not any(p.exists() for p in partial)


def test_a_checkpoint_not_yet_created_is_fine(tmp_path: Path) -> None:
    assert clear_partial_writes(tmp_path / "none") == []

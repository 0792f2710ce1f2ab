"""Read-only view of a streaming checkpoint's file-source log: which files each batch read, which are committed.

Spark writes ``<checkpoint>/sources/<i>/<batch>`` (and ``<batch>.compact`` every 10 batches) *before* a batch
runs, and ``<checkpoint>/commits/<batch>`` after its sink committed. A file is ingested exactly when its batch has
a commit file; a batch with an offset but no commit failed (or is running) and will be replayed on restart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from framework.autoloader.paths import is_inside, to_local
from framework.errors import AutoLoaderError


@dataclass(frozen=True)
class LoggedFile:
    """One file entry of a source log, under the source root.

    Attributes:
        path: The local path of the file.
        timestamp_ms: Its modification time (epoch milliseconds) when the batch listed it.
        batch_id: The micro-batch that read it.
    """

    path: Path
    timestamp_ms: int
    batch_id: int


def _batch_ids(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())


def committed_batches(checkpoint: Path) -> list[int]:
    """The ids of the batches whose sink committed (``commits/<id>`` exists), ascending."""
    return _batch_ids(checkpoint / "commits")


def offset_batches(checkpoint: Path) -> list[int]:
    """The ids of the batches Spark planned (``offsets/<id>`` exists), committed or not, ascending."""
    return _batch_ids(checkpoint / "offsets")


def has_started(checkpoint: Path | None) -> bool:
    """Whether a stream already planned a batch with this checkpoint."""
    return checkpoint is not None and bool(offset_batches(checkpoint))


def commit_time_s(checkpoint: Path, batch_id: int) -> float | None:
    """When batch ``batch_id`` committed: its commit file's modification time in epoch seconds, or None if the
    batch has no commit."""
    path = checkpoint / "commits" / str(batch_id)
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class _Log:
    """One file of a source log: its lines, and (line index, entry) for each entry under the source root."""

    path: Path
    lines: list[str]
    entries: list[tuple[int, LoggedFile]]


def _read_log(log: Path, source_root: Path) -> _Log:
    try:
        lines = log.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return _Log(log, [], [])
    batch_default = int(log.name.split(".")[0])
    entries = []
    for i, line in enumerate(lines[1:], start=1):  # first line is the log version ("v1")
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            local = to_local(str(entry["path"]))
        except (ValueError, KeyError) as exc:
            raise AutoLoaderError(f"streaming checkpoint file {log}, line {i + 1}, is not a file-source log entry "
                                  f"({exc}); restore the file, or run a full refresh of the flow to rebuild its "
                                  "checkpoint") from None
        if is_inside(local, source_root) or local == source_root:
            entries.append((i, LoggedFile(local, int(str(entry.get("timestamp", 0))),
                                          int(str(entry.get("batchId", batch_default))))))
    return _Log(log, lines, entries)


def _source_dirs(checkpoint: Path) -> list[Path]:
    sources = checkpoint / "sources"
    return sorted(p for p in sources.iterdir() if p.is_dir()) if sources.is_dir() else []


def _log_files(source_dir: Path) -> list[Path]:
    """The numbered batch files and the ``.compact`` files of one source log."""
    return [p for p in source_dir.iterdir() if p.is_file() and p.name.split(".")[0].isdigit()
            and (p.name.isdigit() or p.name.endswith(".compact"))]


def logged_files(checkpoint: Path, source_root: Path) -> list[LoggedFile]:
    """Every file any source of this checkpoint logged under ``source_root`` (committed or not): the latest
    compact file and the batch files after it, as Spark restores them."""
    result: dict[tuple[Path, int], LoggedFile] = {}
    for source_dir in _source_dirs(checkpoint):
        files = _log_files(source_dir)
        compacts = sorted((p for p in files if p.name.endswith(".compact")), key=lambda p: int(p.name.split(".")[0]))
        start = int(compacts[-1].name.split(".")[0]) if compacts else -1
        chosen = compacts[-1:] + sorted((p for p in files if p.name.isdigit() and int(p.name) > start),
                                        key=lambda p: int(p.name))
        for log in chosen:
            for _, entry in _read_log(log, source_root).entries:
                result[(entry.path, entry.batch_id)] = entry
    return sorted(result.values(), key=lambda f: (f.batch_id, str(f.path)))


def committed_files(checkpoint: Path, source_root: Path) -> list[LoggedFile]:
    """The logged files under ``source_root`` whose batch has a commit: the files this stream has ingested."""
    done = set(committed_batches(checkpoint))
    return [f for f in logged_files(checkpoint, source_root) if f.batch_id in done]


def uncommitted_files(checkpoint: Path, source_root: Path) -> list[LoggedFile]:
    """Files of planned batches that have no commit yet (a failed batch that will be replayed)."""
    done = set(committed_batches(checkpoint))
    return [f for f in logged_files(checkpoint, source_root) if f.batch_id not in done]


def forget_rewritten(checkpoint: Path, source_root: Path) -> list[Path]:
    """``cloudFiles.allowOverwrites=true``: make files changed since their committed ingestion new again.

    Spark's file source knows a file by its path only: every path in the source log is "seen" and never listed
    again. For each file under ``source_root`` whose latest log entry belongs to a *committed* batch and whose
    modification time is now newer than the logged one, this removes the file's entries from the source log, so
    the next run of the stream lists it as new and ingests the whole file again (Auto Loader's behaviour: the
    latest version is processed; duplicates are the pipeline's to handle). A file of an uncommitted batch is left
    alone: Spark replays that batch from the log. Idempotent; call it before the stream starts.

    Returns:
        The files that will be ingested again.
    """
    done = set(committed_batches(checkpoint))
    forgotten: set[Path] = set()
    for source_dir in _source_dirs(checkpoint):
        logs = [_read_log(log, source_root) for log in _log_files(source_dir)]
        latest: dict[Path, LoggedFile] = {}
        for _, entry in (e for log in logs for e in log.entries):
            if entry.path not in latest or entry.batch_id >= latest[entry.path].batch_id:
                latest[entry.path] = entry
        stale = {path for path, entry in latest.items() if entry.batch_id in done and _changed(path, entry)}
        for log in logs:
            dropped = {i for i, entry in log.entries if entry.path in stale}
            if dropped:
                _rewrite(log.path, [line for i, line in enumerate(log.lines) if i not in dropped])
        forgotten |= stale
    return sorted(forgotten, key=str)


def logged_files_in(source_dir: Path, source_root: Path) -> list[LoggedFile]:
    """The entries of one source log (every log file still present, compact files included) under the root."""
    return [entry for log in _log_files(source_dir) for _, entry in _read_log(log, source_root).entries]


def _changed(path: Path, entry: LoggedFile) -> bool:
    """The file's modification time is newer than the logged one (a vanished file has not changed)."""
    try:
        return path.stat().st_mtime_ns // 1_000_000 > entry.timestamp_ms
    except FileNotFoundError:
        return False


def _rewrite(log: Path, lines: list[str]) -> None:
    """Replace a log file atomically with these lines (as Spark writes it: no final newline)."""
    tmp = log.with_name(f".{log.name}.rewrite.tmp")
    tmp.write_text("\n".join(lines), encoding="utf-8")
    tmp.replace(log)
    log.with_name(f".{log.name}.crc").unlink(missing_ok=True)  # the old checksum no longer matches

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


@dataclass(frozen=True)
class LoggedFile:
    path: Path
    timestamp_ms: int
    batch_id: int


def _batch_ids(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())


def committed_batches(checkpoint: Path) -> list[int]:
    return _batch_ids(checkpoint / "commits")


def offset_batches(checkpoint: Path) -> list[int]:
    return _batch_ids(checkpoint / "offsets")


def has_started(checkpoint: Path | None) -> bool:
    """Whether a stream already planned a batch with this checkpoint."""
    return checkpoint is not None and bool(offset_batches(checkpoint))


def commit_time_s(checkpoint: Path, batch_id: int) -> float | None:
    path = checkpoint / "commits" / str(batch_id)
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return None


def _read_log_file(path: Path) -> list[dict[str, object]]:
    entries = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    for line in lines[1:]:  # first line is the log version ("v1")
        line = line.strip()
        if line:
            entries.append(json.loads(line))
    return entries


def logged_files(checkpoint: Path, source_root: Path) -> list[LoggedFile]:
    """Every file any source of this checkpoint logged under ``source_root`` (committed or not)."""
    result: dict[tuple[Path, int], LoggedFile] = {}
    sources = checkpoint / "sources"
    if not sources.is_dir():
        return []
    for source_dir in sorted(p for p in sources.iterdir() if p.is_dir()):
        files = [p for p in source_dir.iterdir() if p.name.split(".")[0].isdigit()]
        compacts = sorted((p for p in files if p.name.endswith(".compact")), key=lambda p: int(p.name.split(".")[0]))
        start = -1
        chosen: list[Path] = []
        if compacts:
            chosen.append(compacts[-1])
            start = int(compacts[-1].name.split(".")[0])
        chosen += sorted((p for p in files if p.name.isdigit() and int(p.name) > start), key=lambda p: int(p.name))
        for log in chosen:
            batch_default = int(log.name.split(".")[0])
            for entry in _read_log_file(log):
                local = to_local(str(entry["path"]))
                if not is_inside(local, source_root) and local != source_root:
                    continue
                batch = int(str(entry.get("batchId", batch_default)))
                result[(local, batch)] = LoggedFile(local, int(str(entry.get("timestamp", 0))), batch)
    return sorted(result.values(), key=lambda f: (f.batch_id, str(f.path)))


def committed_files(checkpoint: Path, source_root: Path) -> list[LoggedFile]:
    done = set(committed_batches(checkpoint))
    return [f for f in logged_files(checkpoint, source_root) if f.batch_id in done]


def uncommitted_files(checkpoint: Path, source_root: Path) -> list[LoggedFile]:
    """Files of planned batches that have no commit yet (a failed batch that will be replayed)."""
    done = set(committed_batches(checkpoint))
    return [f for f in logged_files(checkpoint, source_root) if f.batch_id not in done]


def _log_files(source_dir: Path) -> list[Path]:
    return [p for p in source_dir.iterdir() if p.is_file() and p.name.split(".")[0].isdigit()
            and (p.name.isdigit() or p.name.endswith(".compact"))]


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
    sources = checkpoint / "sources"
    if not sources.is_dir():
        return []
    done = set(committed_batches(checkpoint))
    forgotten: set[Path] = set()
    for source_dir in sorted(p for p in sources.iterdir() if p.is_dir()):
        latest: dict[Path, LoggedFile] = {}
        for entry in logged_files_in(source_dir, source_root):
            if entry.path not in latest or entry.batch_id >= latest[entry.path].batch_id:
                latest[entry.path] = entry
        stale: set[str] = set()
        for path, entry in latest.items():
            if entry.batch_id not in done:
                continue
            try:
                mtime_ms = path.stat().st_mtime_ns // 1_000_000
            except FileNotFoundError:
                continue
            if mtime_ms > entry.timestamp_ms:
                stale.add(str(path))
        if stale:
            _drop_entries(source_dir, stale)
            forgotten.update(Path(p) for p in stale)
    return sorted(forgotten, key=str)


def logged_files_in(source_dir: Path, source_root: Path) -> list[LoggedFile]:
    """The entries of one source log (every log file still present, compact files included) under the root."""
    out = []
    for log in _log_files(source_dir):
        batch_default = int(log.name.split(".")[0])
        for entry in _read_log_file(log):
            local = to_local(str(entry["path"]))
            if is_inside(local, source_root) or local == source_root:
                out.append(LoggedFile(local, int(str(entry.get("timestamp", 0))),
                                      int(str(entry.get("batchId", batch_default)))))
    return out


def _drop_entries(source_dir: Path, paths: set[str]) -> None:
    """Rewrite every log file of ``source_dir`` without the entries of ``paths`` (atomic per file)."""
    for log in _log_files(source_dir):
        lines = log.read_text(encoding="utf-8").splitlines()
        kept = lines[:1] + [line for line in lines[1:]
                            if not line.strip() or str(to_local(str(json.loads(line)["path"]))) not in paths]
        if len(kept) == len(lines):
            continue
        tmp = log.with_name(f".{log.name}.rewrite.tmp")
        tmp.write_text("\n".join(kept), encoding="utf-8")  # as Spark writes it: no final newline
        tmp.replace(log)
        log.with_name(f".{log.name}.crc").unlink(missing_ok=True)  # the old checksum no longer matches

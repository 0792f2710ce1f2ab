"""``cloudFiles.cleanSource``: move or delete source files once their batch is committed and retention passed.

Only files recorded in a committed batch of the flow's checkpoint are touched, so files of a failed (uncommitted)
batch always stay where they are and are read again when the batch is replayed. A file that changed after it was
ingested (newer modification time than the one logged) is left alone.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path

from framework.autoloader import checkpoint as ckpt
from framework.autoloader.options import CloudFilesOptions
from framework.autoloader.paths import is_inside, to_local
from framework.errors import AutoLoaderError

log = logging.getLogger(__name__)


def check_destination(opts: CloudFilesOptions, root: Path) -> Path | None:
    """The archive folder for MOVE, checked not to be inside the source folder."""
    if opts.clean_source != "MOVE" or not opts.move_destination:
        return None
    dest = to_local(opts.move_destination)
    if is_inside(dest, root):
        raise AutoLoaderError(f"cloudFiles.cleanSource.moveDestination '{opts.move_destination}' is inside the "
                              f"source folder '{root}': archived files would be ingested again. Choose a folder "
                              "outside the source folder.")
    return dest


def clean_committed(opts: CloudFilesOptions, root: Path, checkpoint: Path, now_s: float | None = None) -> list[Path]:
    """Move/delete the files of committed batches whose commit is older than the retention. Idempotent.

    Returns:
        The source files that were moved or deleted by this call.
    """
    if opts.clean_source == "OFF":
        return []
    dest = check_destination(opts, root)
    now_s = time.time() if now_s is None else now_s
    commit_times: dict[int, float | None] = {}
    cleaned: list[Path] = []
    for entry in ckpt.committed_files(checkpoint, root):
        if entry.batch_id not in commit_times:
            commit_times[entry.batch_id] = ckpt.commit_time_s(checkpoint, entry.batch_id)
        committed_at = commit_times[entry.batch_id]
        if committed_at is None or committed_at + opts.retention_s > now_s:
            continue
        try:
            st = entry.path.stat()
        except FileNotFoundError:
            continue  # already cleaned
        if int(st.st_mtime * 1000) > entry.timestamp_ms:
            continue  # rewritten after ingestion: not the data we committed
        try:
            if dest is not None:
                target = dest / entry.path.relative_to(root) if entry.path != root else dest / entry.path.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(entry.path), str(target))
            else:
                os.remove(entry.path)
        except FileNotFoundError:
            continue
        except OSError as exc:  # best effort, as on Databricks
            log.warning("cloudFiles.cleanSource could not %s %s: %s", opts.clean_source, entry.path, exc)
            continue
        cleaned.append(entry.path)
    return cleaned

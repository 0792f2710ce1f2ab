"""One update at a time per storage root.

The lock is a file lock (``flock``): under ``<storage>/system`` for a local storage root; for an object-store root
(``s3a://...``, which has no locks) in a local folder named after the URL, so it serializes the updates of that
root on this machine only (``framework/storage/url.py`` says what that means for Delta's commits there).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from framework.errors import ConcurrentUpdateError
from framework.storage.url import StoragePath, is_local


@contextmanager
def update_lock(storage: StoragePath, update_id: str) -> Iterator[None]:
    """Hold the storage root's update lock; a second update fails fast with :class:`ConcurrentUpdateError`.

    Taken before the JVM starts, so a refused update costs well under a second. The OS releases the lock when
    the process dies, so a killed update never blocks the next one."""
    lock_path = lock_file(storage)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(lock_path, "a+")  # noqa: SIM115 - held for the whole update
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip()[:200] or "another process"
        handle.close()
        raise ConcurrentUpdateError(
            f"another update is running on {storage} ({holder}); wait for it to finish or stop it") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"update {update_id}, pid {os.getpid()}, started {datetime.now(UTC).isoformat()}")
    handle.flush()
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def lock_file(storage: StoragePath) -> Path:
    """Where the update lock of ``storage`` lives (see the module's docstring)."""
    if isinstance(storage, Path) and is_local(storage):
        return storage / "system" / "update.lock"
    digest = hashlib.sha256(str(storage).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / "medallion-locks" / f"{digest}.lock"

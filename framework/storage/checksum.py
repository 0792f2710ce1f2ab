"""Delta's version checksum (``_delta_log/<version>.crc``) for the commits the driver writes.

Delta writes one after each of its own commits: the table's protocol and metadata, its file count and size, and
its transactions. A reader that finds it for the version it loads takes the protocol and metadata from it; without
it, Delta replays the log with a Spark job first (0.2 s on two cores for a two-commit table, against 0.02 s), for
every snapshot: a stream reading the table, a catalog registration, a batch read. :func:`write_checksum` writes
the checksum of a driver commit from the previous version's checksum and the commit's own actions, as Delta's
incremental checksum does; when the previous version has none (or the commit removes a file whose size it does
not know), it writes none and readers take Delta's usual path. Delta checks a checksum against the state it
reconstructs and fails the read on a mismatch, so a wrong one could not go unnoticed; the fields it cannot keep
exact cheaply (file size histograms, the list of files) are left out, which Delta allows.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

_DELETION_VECTOR_COUNTS = ("numDeletedRecordsOpt", "numDeletionVectorsOpt")


def checksum_path(table: Path, version: int) -> Path:
    """Where the checksum of ``version`` is."""
    return table / "_delta_log" / f"{version:020d}.crc"


def write_checksum(table: Path, version: int, actions: list[dict[str, Any]]) -> bool:
    """Write the checksum of ``version``, committed with ``actions`` on top of ``version - 1``; False when it
    cannot be derived (nothing written)."""
    checksum = next_checksum(_previous(table, version), actions)
    if checksum is None:
        return False
    target = checksum_path(table, version)
    temp = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
    temp.write_text(json.dumps(checksum, separators=(",", ":")), encoding="utf-8")
    os.replace(temp, target)
    return True


def _previous(table: Path, version: int) -> dict[str, Any] | None:
    if version == 0:
        return {"tableSizeBytes": 0, "numFiles": 0, "setTransactions": [], "domainMetadata": []}
    try:
        found = json.loads(checksum_path(table, version - 1).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def next_checksum(previous: dict[str, Any] | None, actions: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The checksum after ``actions`` of the version whose checksum is ``previous`` (pure); None when it cannot
    be derived."""
    if previous is None:
        return None
    adds = [a["add"] for a in actions if "add" in a]
    removes = [a["remove"] for a in actions if "remove" in a]
    protocol = next((a["protocol"] for a in actions if "protocol" in a), previous.get("protocol"))
    metadata = next((a["metaData"] for a in actions if "metaData" in a), previous.get("metadata"))
    if protocol is None or metadata is None or any(not isinstance(r.get("size"), int) for r in removes) \
            or any(f.get("deletionVector") for f in (*adds, *removes)):
        return None
    checksum: dict[str, Any] = {
        "txnId": str(uuid.uuid4()),
        "tableSizeBytes": int(previous["tableSizeBytes"]) + sum(a["size"] for a in adds) - sum(r["size"] for r in removes),
        "numFiles": int(previous["numFiles"]) + len(adds) - len(removes),
        "numMetadata": 1, "numProtocol": 1, "metadata": metadata, "protocol": protocol}
    for key in _DELETION_VECTOR_COUNTS:  # the driver adds and removes only files without deletion vectors
        if key in previous:
            checksum[key] = previous[key]
    transactions = previous.get("setTransactions")
    if transactions is not None:
        by_app = {t["appId"]: t for t in transactions}
        by_app.update({a["txn"]["appId"]: a["txn"] for a in actions if "txn" in a})
        checksum["setTransactions"] = list(by_app.values())
    if previous.get("domainMetadata") is not None:
        checksum["domainMetadata"] = previous["domainMetadata"]
    return checksum

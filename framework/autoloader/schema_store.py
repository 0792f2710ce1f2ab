"""The schema location: versioned schemas under ``<schemaLocation>/_schemas/0, 1, ...`` and a small state file.

Each version file holds ``v1`` on its first line and a JSON document on the second:
``{"dataSchemaJson": <StructType JSON>, "partitionSchemaJson": <StructType JSON>}``. A new version is only ever
appended; the newest is the schema the stream reads with.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql.types import StructType

from framework.autoloader.paths import to_local

STATE_FILE = "_autoloader_state.json"


@dataclass(frozen=True)
class StoredSchema:
    """One version of a stream's schema, as stored in ``_schemas/<version>``.

    Attributes:
        version: The version number (0 for the first schema).
        data: The columns read from the files.
        partitions: The columns read from ``<name>=<value>`` folders.
    """

    version: int
    data: StructType
    partitions: StructType


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, path)


class SchemaStore:
    """Versioned schemas and small state of one Auto Loader stream."""

    def __init__(self, location: str) -> None:
        self.root = to_local(location)
        self.schemas = self.root / "_schemas"

    def versions(self) -> list[int]:
        """The stored schema versions, ascending; empty before the first schema is written."""
        if not self.schemas.is_dir():
            return []
        return sorted(int(p.name) for p in self.schemas.iterdir() if p.name.isdigit())

    def latest(self) -> StoredSchema | None:
        """The newest stored schema (the one the stream reads with), or None before the first one."""
        versions = self.versions()
        if not versions:
            return None
        return self.read(versions[-1])

    def read(self, version: int) -> StoredSchema:
        """Read schema version ``version``.

        Raises:
            FileNotFoundError: No such version is stored.
        """
        lines = (self.schemas / str(version)).read_text(encoding="utf-8").splitlines()
        doc = json.loads(lines[1])
        return StoredSchema(version, StructType.fromJson(doc["dataSchemaJson"]),
                            StructType.fromJson(doc["partitionSchemaJson"]))

    def write(self, data: StructType, partitions: StructType) -> StoredSchema:
        """Append a new version and return it."""
        versions = self.versions()
        version = versions[-1] + 1 if versions else 0
        doc = {"dataSchemaJson": data.jsonValue(), "partitionSchemaJson": partitions.jsonValue()}
        _atomic_write(self.schemas / str(version), "v1\n" + json.dumps(doc) + "\n")
        return StoredSchema(version, data, partitions)

    def state(self) -> dict[str, Any]:
        """The stream's small state (``_autoloader_state.json``, such as ``existingFilesCutoffMs``); empty
        before anything was stored."""
        try:
            loaded: dict[str, Any] = json.loads((self.root / STATE_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        return loaded

    def update_state(self, **values: Any) -> None:
        """Merge ``values`` into the stored state and write it back atomically."""
        state = self.state()
        state.update(values)
        _atomic_write(self.root / STATE_FILE, json.dumps(state, indent=1))

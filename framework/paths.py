"""Map Databricks paths (``dbfs:/``, ``/dbfs/``, ``/Volumes/``, ``/databricks-datasets/``, workspace paths)
to local folders, so that notebooks with hard-coded Databricks paths run unchanged on a laptop."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from framework.errors import PathMappingError

DATABRICKS_PREFIXES = ("dbfs:/", "/dbfs/", "/Volumes/", "/databricks-datasets/", "/Workspace/", "/Repos/")


@dataclass(frozen=True)
class PathMapper:
    """Longest-prefix mapping from Databricks paths to local paths (absolute after construction)."""

    mappings: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_spec(cls, mappings: Mapping[str, str], root: Path) -> PathMapper:
        """A mapper from the spec's ``paths``: prefixes are normalized (``/dbfs/x`` as ``dbfs:/x``),
        relative local folders resolved against ``root``, object-store URLs kept as they are."""
        resolved = {}
        for prefix, local in mappings.items():
            if "://" in local:  # an object-store URL (s3a://bucket/landing): no local folder to resolve
                resolved[_norm_prefix(prefix)] = local.rstrip("/")
                continue
            target = Path(local)
            resolved[_norm_prefix(prefix)] = str(target if target.is_absolute() else (root / target).resolve())
        return cls(resolved)

    def map(self, path: str) -> str:
        """Return the local path for ``path``; paths outside the Databricks prefixes are returned as given."""
        if not isinstance(path, str):
            return path
        candidate = _canonical(path)
        for prefix in sorted(self.mappings, key=len, reverse=True):
            if candidate == prefix.rstrip("/") or candidate.startswith(prefix.rstrip("/") + "/"):
                rest = candidate[len(prefix.rstrip("/")):].lstrip("/")
                local = self.mappings[prefix]
                return f"{local.rstrip('/')}/{rest}" if rest else local
        if candidate.startswith("dbfs:/"):
            raise PathMappingError(
                f"'{path}' is a DBFS path with no local mapping. Map it in the spec, e.g.\n"
                f"  paths:\n    \"{_suggest(candidate)}\": data/{_suggest(candidate).split('/')[-1] or 'dbfs'}")
        return path

    def is_databricks_path(self, path: str) -> bool:
        """Whether ``path`` starts with one of :data:`DATABRICKS_PREFIXES`, so that it needs a mapping to run
        locally."""
        return isinstance(path, str) and path.startswith(DATABRICKS_PREFIXES)


def _canonical(path: str) -> str:
    """``/dbfs/x`` and ``dbfs:/x`` name the same file; use ``dbfs:/x`` for both."""
    if path.startswith("/dbfs/"):
        return "dbfs:/" + path[len("/dbfs/"):]
    if path.startswith("dbfs:///"):
        return "dbfs:/" + path[len("dbfs:///"):]
    return path


def _norm_prefix(prefix: str) -> str:
    return _canonical(prefix).rstrip("/") or prefix


def _suggest(path: str) -> str:
    parts = path[len("dbfs:/"):].split("/")
    return "dbfs:/" + "/".join(parts[:2]) if len(parts) > 1 else path

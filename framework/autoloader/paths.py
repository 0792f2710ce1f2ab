"""Local paths: ``file:`` URIs ↔ OS paths, listing of a source folder the way Spark's file source lists it."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from framework.errors import AutoLoaderError
from framework.storage.url import ObjectStoreUrl


def to_local(path: str) -> Path:
    """Turn ``file:/x``, ``file:///x`` or ``/x`` into a local :class:`Path`.

    Raises:
        AutoLoaderError: a non-local scheme (dbfs:/, s3://, ...): map it to a local folder first.
    """
    if path.startswith("file:"):
        return Path(unquote(urlparse(path).path))
    if "://" in path or path.startswith("dbfs:"):
        raise AutoLoaderError(f"cloudFiles path '{path}' is not a local path; map it to a local folder (the "
                              "pipeline spec's path mappings) before running locally")
    return Path(path).absolute()


def same_file(uri: str, local: Path) -> bool:
    """Whether ``uri`` (a ``file:`` URI or a plain path, as a source log writes it) names the local file
    ``local``."""
    return to_local(uri) == local


def is_hidden(name: str) -> bool:
    """Spark's file index skips names starting with '_' or '.' (and ending in ._COPYING_)."""
    return name.startswith(("_", ".")) or name.endswith("._COPYING_")


@dataclass(frozen=True)
class ListedFile:
    """One data file found by :func:`list_files`.

    Attributes:
        path: The file's local path.
        size: Its size in bytes.
        mtime_ms: Its modification time in epoch milliseconds (what Spark's file source compares).
    """

    path: Path
    size: int
    mtime_ms: int


@dataclass(frozen=True)
class RemoteFile:
    """One data file on an object store, listed through Hadoop (``remote.py``).

    Attributes:
        path: Its URL.
        size: Its size in bytes.
        mtime_ms: Its modification time in epoch milliseconds.
    """

    path: ObjectStoreUrl
    size: int
    mtime_ms: int


def list_files(root: Path, glob_filter: str | None = None, recursive: bool = True) -> list[ListedFile]:
    """Every visible data file under ``root`` (Spark's rules for hidden names), oldest first."""
    found: list[ListedFile] = []
    if root.is_file():
        st = root.stat()
        return [ListedFile(root, st.st_size, int(st.st_mtime * 1000))]
    if not root.is_dir():
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not is_hidden(d)) if recursive else []
        for name in filenames:
            if is_hidden(name) or (glob_filter and not fnmatch.fnmatchcase(name, glob_filter)):
                continue
            full = Path(dirpath) / name
            try:
                st = full.stat()
            except FileNotFoundError:
                continue
            found.append(ListedFile(full, st.st_size, int(st.st_mtime * 1000)))
    found.sort(key=lambda f: (f.mtime_ms, str(f.path)))
    return found


def is_inside(child: Path, parent: Path) -> bool:
    """Whether ``child`` is ``parent`` or lies below it, comparing the resolved paths (symlinks followed)."""
    try:
        child.resolve().relative_to(parent.resolve())
    except ValueError:
        return False
    return True

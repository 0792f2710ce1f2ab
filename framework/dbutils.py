"""A local ``dbutils``: ``fs`` on the local file system (through the path mapping), ``widgets`` backed by the
pipeline configuration, ``secrets`` from environment variables or a git-ignored ``.secrets.env`` file."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from framework.errors import PipelineError
from framework.paths import PathMapper
from framework.redaction import register_secret


class FileInfo(NamedTuple):
    """One entry of ``dbutils.fs.ls``, with Databricks' field names.

    Attributes:
        path: A ``file:`` path; a folder's ends in ``/``.
        name: The file or folder name (a folder's ends in ``/``).
        size: The size in bytes (0 for a folder).
        modificationTime: The modification time in epoch milliseconds.
    """

    path: str
    name: str
    size: int
    modificationTime: int


class SecretNotFoundError(PipelineError):
    """A secret asked for with ``dbutils.secrets.get`` is set neither in the environment nor in
    ``.secrets.env``."""

    code = "SECRET_NOT_FOUND"


def _local(path: str) -> str:
    return path[len("file:"):] if path.startswith("file:") else path


@dataclass
class LocalFs:
    """``dbutils.fs`` on the local file system: every path goes through the spec's path mapping first, so
    ``dbfs:/`` and ``/Volumes/`` paths in pipeline code work as in the workspace."""

    mapper: PathMapper

    def _p(self, path: str) -> Path:
        return Path(_local(self.mapper.map(path)))

    def ls(self, path: str) -> list[FileInfo]:
        """List a folder's entries sorted by name (or the one entry of a file), as ``dbutils.fs.ls`` does.

        Raises:
            FileNotFoundError: ``path`` does not exist.
        """
        target = self._p(path)
        if not target.exists():
            raise FileNotFoundError(f"dbutils.fs.ls: {path} does not exist (local: {target})")
        entries = [target] if target.is_file() else sorted(target.iterdir())
        out = []
        for entry in entries:
            stat = entry.stat()
            name = entry.name + ("/" if entry.is_dir() else "")
            out.append(FileInfo(f"file:{entry}{'/' if entry.is_dir() else ''}", name,
                                0 if entry.is_dir() else stat.st_size, int(stat.st_mtime * 1000)))
        return out

    def mkdirs(self, path: str) -> bool:
        """Create the folder and any missing parents (an existing folder is fine); returns True."""
        self._p(path).mkdir(parents=True, exist_ok=True)
        return True

    def put(self, path: str, contents: str, overwrite: bool = False) -> bool:
        """Write ``contents`` to a file as text, creating its folder; returns True.

        Raises:
            FileExistsError: The file exists and ``overwrite`` is False.
        """
        target = self._p(path)
        if target.exists() and not overwrite:
            raise FileExistsError(f"dbutils.fs.put: {path} exists; pass overwrite=True")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(contents)
        return True

    def head(self, path: str, maxBytes: int = 65536) -> str:
        """The first ``maxBytes`` bytes of a file, decoded as UTF-8 (undecodable bytes replaced)."""
        with open(self._p(path), "rb") as handle:
            return handle.read(maxBytes).decode("utf-8", errors="replace")

    def cp(self, src: str, dst: str, recurse: bool = False) -> bool:
        """Copy a file, or with ``recurse=True`` a folder (merged into an existing target); returns True.

        Raises:
            IsADirectoryError: ``src`` is a folder and ``recurse`` is False.
        """
        source, target = self._p(src), self._p(dst)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            if not recurse:
                raise IsADirectoryError(f"dbutils.fs.cp: {src} is a directory; pass recurse=True")
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target)
        return True

    def mv(self, src: str, dst: str, recurse: bool = False) -> bool:
        """Move a file or a folder; returns True. Unlike on Databricks, a folder moves without
        ``recurse=True`` (the flag is accepted and ignored)."""
        source, target = self._p(src), self._p(dst)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(source), str(target))
        return True

    def rm(self, path: str, recurse: bool = False) -> bool:
        """Delete a file, or with ``recurse=True`` a folder and everything in it.

        Returns:
            True if something was deleted, False if ``path`` did not exist.

        Raises:
            IsADirectoryError: ``path`` is a folder and ``recurse`` is False.
        """
        target = self._p(path)
        if not target.exists():
            return False
        if target.is_dir():
            if not recurse:
                raise IsADirectoryError(f"dbutils.fs.rm: {path} is a directory; pass recurse=True")
            shutil.rmtree(target)
        else:
            target.unlink()
        return True


@dataclass
class LocalWidgets:
    """``dbutils.widgets`` backed by the pipeline's ``configuration``: a widget's value is the configuration
    entry of the same name; declaring a widget only adds a default for a name not configured."""

    values: dict[str, str]

    def get(self, name: str) -> str:
        """The value of widget ``name`` (``getArgument`` is the same method).

        Raises:
            PipelineError: ``WIDGET_NOT_DEFINED``: no configured value or declared widget has that name.
        """
        if name not in self.values:
            raise PipelineError(f"widget '{name}' is not defined: add it to the spec's `configuration`",
                                code="WIDGET_NOT_DEFINED")
        return self.values[name]

    getArgument = get

    def text(self, name: str, defaultValue: str = "", label: str | None = None) -> None:
        """Declare a text widget: ``defaultValue`` becomes its value unless the configuration sets ``name``;
        ``label`` is ignored."""
        self.values.setdefault(name, defaultValue)

    def dropdown(self, name: str, defaultValue: str, choices: list[str], label: str | None = None) -> None:
        """Declare a choice widget (also ``combobox`` and ``multiselect``): ``defaultValue`` becomes its value
        unless the configuration sets ``name``; ``choices`` and ``label`` are not checked."""
        self.values.setdefault(name, defaultValue)

    combobox = dropdown
    multiselect = dropdown

    def remove(self, name: str) -> None:
        """Forget widget ``name``, configured value included; an unknown name is ignored."""
        self.values.pop(name, None)

    def removeAll(self) -> None:
        """Forget every widget, configured values included."""
        self.values.clear()


@dataclass
class LocalSecrets:
    """``dbutils.secrets.get(scope, key)``: env var ``DATABRICKS_SECRET_<SCOPE>_<KEY>`` (upper-cased, non-
    alphanumerics as ``_``) or a line ``scope/key=value`` in ``.secrets.env`` at the project root."""

    secrets_file: Path

    def get(self, scope: str, key: str) -> str:
        """The secret's value; from now on it shows as ``[REDACTED]`` in everything the framework prints or
        logs (framework/redaction.py), as on Databricks."""
        value = self._lookup(scope, key)
        register_secret(value)
        return value

    def getBytes(self, scope: str, key: str) -> bytes:
        """The secret's value as UTF-8 bytes (registered for redaction like :meth:`get`)."""
        return self.get(scope, key).encode("utf-8")

    def _lookup(self, scope: str, key: str) -> str:
        env_name = "DATABRICKS_SECRET_" + re.sub(r"[^A-Za-z0-9]", "_", f"{scope}_{key}").upper()
        if env_name in os.environ:
            return os.environ[env_name]
        if self.secrets_file.exists():
            for line in self.secrets_file.read_text().splitlines():
                if "=" in line and not line.lstrip().startswith("#"):
                    name, value = line.split("=", 1)
                    if name.strip() == f"{scope}/{key}":
                        value = value.strip()
                        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                            value = value[1:-1]
                        return value
        raise SecretNotFoundError(
            f"secret '{key}' in scope '{scope}' is not set locally: export {env_name}=... or add the line "
            f"'{scope}/{key}=...' to {self.secrets_file} (git-ignored)")

    def list(self, scope: str) -> list[Any]:
        """Always an empty list: locally a scope's keys are not enumerated, each secret is looked up by its
        key."""
        return []


class LocalDbutils:
    """The subset of ``dbutils`` that pipeline code uses."""

    def __init__(self, mapper: PathMapper, configuration: Mapping[str, str], secrets_file: Path) -> None:
        self.fs = LocalFs(mapper)
        self.widgets = LocalWidgets(dict(configuration))
        self.secrets = LocalSecrets(secrets_file)

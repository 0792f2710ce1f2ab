"""What a bundle must carry: the pipeline's libraries and every local module they import.

A bundle deploys the folder that holds its ``databricks.yml`` and nothing else, so ``medallion deploy`` writes a
self-contained folder: the library files at their paths under the project root, the Python modules and
packages they import that are not installed packages (helpers beside a library such as
``pipelines/sample/transforms.py``, or packages under the project root), the ``framework`` package when the
code imports it or reads ``jdbc_incremental`` (whose registering notebook imports it), and the project's
``expectations/`` rule files. Imports are read with :mod:`ast`, never run; a name that resolves to nothing local
is an installed package (``dlt``, ``pyspark``, ...) and is the pipeline environment's business.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# The installed framework package (this file is framework/deploy/contents.py).
FRAMEWORK_DIR = Path(__file__).resolve().parents[1]
# Not Python code a pipeline imports: byte code and editor or test droppings.
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", ".*")


@dataclass(frozen=True)
class BundleFile:
    """One file or folder to copy into the bundle: ``source`` on disk, ``relative`` in the bundle."""

    source: Path
    relative: str


def imported_names(text: str) -> set[str]:
    """The top-level module names that Python ``text`` imports (absolute imports only)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:  # a SQL file or a notebook with magics: nothing to follow
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _local_module(name: str, folders: Iterable[Path]) -> Path | None:
    """The module file or package folder ``name`` resolves to in the first of ``folders`` that has it."""
    for folder in folders:
        for candidate in (folder / f"{name}.py", folder / name):
            if candidate.is_file() or (candidate.is_dir() and any(candidate.glob("*.py"))):
                return candidate
    return None


def bundle_files(root: Path, libraries: list[tuple[Path, str]], *, needs_framework: bool) -> list[BundleFile]:
    """Every file and folder the bundle rooted at a copy of ``root`` needs, each once, in a stable order.

    Args:
        root: The project root; bundle paths are relative to it.
        libraries: The resolved library files with their text.
        needs_framework: Whether the deployment adds a notebook that imports ``framework``.
    """
    root = root.resolve()
    found: dict[str, BundleFile] = {}
    pending = list(libraries)
    wants_framework = needs_framework
    while pending:
        path, text = pending.pop()
        path = path.resolve()
        found.setdefault(path.relative_to(root).as_posix(), BundleFile(path, path.relative_to(root).as_posix()))
        for name in sorted(imported_names(text)):
            if name == "framework":
                wants_framework = True
                continue
            module = _local_module(name, (path.parent, root))
            if module is None or not module.resolve().is_relative_to(root):
                continue
            relative = module.resolve().relative_to(root).as_posix()
            if relative not in found and module.is_file():
                pending.append((module, module.read_text(encoding="utf-8", errors="replace")))
            found.setdefault(relative, BundleFile(module.resolve(), relative))
    if wants_framework and "framework" not in found:
        found["framework"] = BundleFile(FRAMEWORK_DIR, "framework")
    if (root / "expectations").is_dir():
        found.setdefault("expectations", BundleFile(root / "expectations", "expectations"))
    return [found[key] for key in sorted(found)]


def copy_into(out_dir: Path, files: list[BundleFile]) -> None:
    """Copy ``files`` into ``out_dir`` at their bundle paths, replacing what an earlier deploy copied there."""
    for item in files:
        target = out_dir / item.relative
        if target.resolve() == item.source:  # deploying into the project root itself
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if item.source.is_dir():
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(item.source, target, ignore=_SKIP)
        else:
            shutil.copy2(item.source, target)


def sync_includes(files: list[BundleFile]) -> list[str]:
    """The bundle's ``sync.include`` patterns: each copied folder's tree and each copied file."""
    return [f"{item.relative}/**" if item.source.is_dir() else item.relative for item in files]

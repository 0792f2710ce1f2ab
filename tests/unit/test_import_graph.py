"""The ``framework`` package imports without cycles, read from the source with ``ast`` (nothing is imported).

Every import counts wherever it is written (module level, inside a function, ...), except under
``if TYPE_CHECKING:``: a lazy import inside a function hides a cycle from Python but not from the reader.

Two granularities:

- packages: each subpackage (``framework.runner``, ``framework.quality``, ...) is one node, each top-level module
  ``framework/x.py`` is its own node, and ``framework/__init__.py`` is the node ``framework``;
- modules, within each subpackage (its ``__init__.py`` is the node named like the package).

A failure lists every cycle: each strongly connected component, with every import that closes it (file:line).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "framework"
PACKAGE = "framework"


@dataclass(frozen=True)
class Import:
    """One import statement: ``source`` imports ``target`` (full module names) at ``file:line``."""

    source: str
    target: str
    file: str
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    """Every module of the package by full name."""
    return {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements anywhere in ``tree``, skipping the bodies of ``if TYPE_CHECKING:``."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    """The framework modules that module ``name`` imports (``from pkg import submodule`` names the submodule)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[Import] = []
    for node in _import_nodes(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = _absolute(node, name, path.name == "__init__.py")
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for target in targets:
            while target and target not in modules:  # `import framework.x.y` of a name inside a module
                target = target.rpartition(".")[0]
            if target.split(".")[0] == PACKAGE and target != name:
                found.append(Import(name, target, str(path.relative_to(ROOT.parent)), node.lineno))
    return found


def all_imports() -> list[Import]:
    modules = all_modules()
    return [imp for name, path in modules.items() for imp in imports_of(name, path, modules)]


def package_node(module: str) -> str:
    """``framework.runner.update`` → ``framework.runner``; ``framework.api`` → itself; the root → ``framework``."""
    return ".".join(module.split(".")[:2])


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm: the components with more than one node (every cycle lies inside one)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(components)


def cycles(imports: Iterable[Import], node: Callable[[str], str], skip: frozenset[str] = frozenset()) -> list[str]:
    """One line per cycle (strongly connected component), then the imports inside it, where they are written."""
    edges: dict[str, set[str]] = {}
    where: dict[tuple[str, str], list[str]] = {}
    for imp in imports:
        a, b = node(imp.source), node(imp.target)
        if a == b or a in skip or b in skip:
            continue
        edges.setdefault(a, set()).add(b)
        edges.setdefault(b, set())
        places = where.setdefault((a, b), [])
        if f"{imp.file}:{imp.line}" not in places:
            places.append(f"{imp.file}:{imp.line}")
    report = []
    for component in strongly_connected(edges):
        members = set(component)
        report.append("cycle: " + " <-> ".join(component))
        for (a, b), places in sorted(where.items()):
            if a in members and b in members:
                report.append(f"    {a} -> {b}  ({', '.join(places)})")
    return report


def subpackages() -> list[str]:
    return sorted({package_node(m) for m, p in all_modules().items()
                   if m.count(".") >= 1 and (ROOT / m.split(".")[1]).is_dir()})


# ------------------------------------------------------------------------------------------------------ tests
def test_the_parser_sees_lazy_relative_and_submodule_imports(tmp_path: Path) -> None:
    """The rules the graph is built with (checked on the real tree, which has each kind)."""
    modules = all_modules()
    quality = imports_of("framework.quality", modules["framework.quality"], modules)
    assert {i.target for i in quality} >= {"framework.quality.decorators", "framework.quality.rules"}
    loader = imports_of("framework.loader", modules["framework.loader"], modules)
    assert "framework.shim.dlt" in {i.target for i in loader}  # `from framework.shim import dlt` inside a function
    root = imports_of("framework", modules["framework"], modules)
    assert "framework.runner.update" in {i.target for i in root}  # lazy imports count
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import framework.api\n"
                     "else:\n    import framework.graph\nfrom .errors import PipelineError\n")
    names = [n.names[0].name for n in _import_nodes(tree) if isinstance(n, ast.Import)]
    assert names == ["framework.graph"]
    relative = [n for n in _import_nodes(tree) if isinstance(n, ast.ImportFrom) and n.level == 1]
    assert _absolute(relative[0], "framework.quality.rules", False) == "framework.quality.errors"


def test_cycle_finder_reports_every_component() -> None:
    imports = [Import("framework.a", "framework.b", "a.py", 1), Import("framework.b", "framework.a", "b.py", 2),
               Import("framework.c", "framework.d", "c.py", 3), Import("framework.d", "framework.e", "d.py", 4),
               Import("framework.e", "framework.c", "e.py", 5), Import("framework.e", "framework.f", "e.py", 6)]
    report = cycles(imports, lambda m: m)
    assert report == [
        "cycle: framework.a <-> framework.b",
        "    framework.a -> framework.b  (a.py:1)", "    framework.b -> framework.a  (b.py:2)",
        "cycle: framework.c <-> framework.d <-> framework.e",
        "    framework.c -> framework.d  (c.py:3)", "    framework.d -> framework.e  (d.py:4)",
        "    framework.e -> framework.c  (e.py:5)"]
    assert cycles(imports, lambda m: m, skip=frozenset({"framework.a", "framework.d"})) == []


def test_no_package_cycles() -> None:
    report = cycles(all_imports(), package_node)
    assert not report, "import cycles between framework's packages:\n" + "\n".join(report)


def test_no_module_cycles_inside_a_package() -> None:
    imports = all_imports()
    report = []
    for package in subpackages():
        inside = [i for i in imports if package_node(i.source) == package and package_node(i.target) == package]
        report += cycles(inside, lambda m: m)
    assert not report, "import cycles between modules of one package:\n" + "\n".join(report)

"""No function in ``framework/`` is over 60 lines (house rule, issue 22), read from the source with ``ast``.

A function's length runs from its ``def`` line (decorators excluded) to its last line, docstring and nested
functions included; a nested function is also measured on its own. The functions that are still longer are
listed in ``ALLOWED`` while they are being shortened; the list may only shrink: an allowed function that is now
short, renamed or gone fails the test until it is taken off.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORK = ROOT / "framework"
MAX_LINES = 60

# "path:qualified name" of the functions still over MAX_LINES. Empty: the last ones (issue 22: runner/update.py
# run_update and _execute, spec.py parse_spec, render.py to_html, quality/report_html.py _trend,
# autoloader/records.py csv_records, autoloader/source.py load_cloud_files, autoloader/options.py parse_options)
# have been split. Add to it only with a reason, and take entries off as they are shortened.
ALLOWED: frozenset[str] = frozenset()


def function_lengths(path: Path) -> dict[str, int]:
    """Every function and method of the file by qualified name (``Class.method``, ``outer.inner``): its lines."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                lengths[name] = (child.end_lineno or child.lineno) - child.lineno + 1
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(), filename=str(path)), "")
    return lengths


def all_lengths() -> dict[str, int]:
    return {f"{path.relative_to(ROOT).as_posix()}:{name}": lines
            for path in sorted(FRAMEWORK.rglob("*.py")) for name, lines in function_lengths(path).items()}


def test_the_measure(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("@decorator\ndef f():\n    '''doc'''\n\n    def g():\n        return 1\n    return g\n\n\n"
                      "class C:\n    async def m(self):\n        pass\n")
    assert function_lengths(source) == {"f": 6, "f.g": 2, "C.m": 2}


def test_no_function_is_over_60_lines() -> None:
    long = {name: lines for name, lines in all_lengths().items() if lines > MAX_LINES}
    new = sorted(f"{name} ({lines} lines)" for name, lines in long.items() if name not in ALLOWED)
    assert not new, f"functions over {MAX_LINES} lines (split them):\n  " + "\n  ".join(new)


def test_the_allowed_list_only_shrinks() -> None:
    lengths = all_lengths()
    stale = sorted(f"{name} ({lengths[name]} lines)" if name in lengths else f"{name} (gone)"
                   for name in ALLOWED if lengths.get(name, 0) <= MAX_LINES)
    assert not stale, ("take these off ALLOWED in tests/unit/test_function_length.py, they are no longer over "
                       f"{MAX_LINES} lines:\n  " + "\n  ".join(stale))

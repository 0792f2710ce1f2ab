"""Databricks notebook sources (``# Databricks notebook source``) → plain Python, line numbers kept."""

from __future__ import annotations

import warnings

NOTEBOOK_HEADER = "# Databricks notebook source"
CELL_SEPARATOR = "# COMMAND ----------"
_MAGIC = "# MAGIC"


def is_notebook_source(text: str) -> bool:
    """Whether ``text`` is a Databricks notebook exported as source: it starts with
    :data:`NOTEBOOK_HEADER` (after an optional byte-order mark)."""
    return text.lstrip("\ufeff").startswith(NOTEBOOK_HEADER)


def notebook_to_python(text: str, path: str = "<notebook>") -> str:
    """Keep Python cells; blank out markdown and magic cells (%md, %pip, %run, %sql) so lines still match.

    ``%pip`` cells are skipped with a warning (install dependencies in the environment instead); ``%sql``
    and ``%run`` cells are skipped with a warning, as they are not part of a Python pipeline's declarations.
    """
    lines = text.splitlines()
    out: list[str] = []
    cell: list[str] = []

    def flush() -> None:
        magic_lines = [ln for ln in cell if ln.strip()]
        if magic_lines and all(ln.startswith(_MAGIC) for ln in magic_lines):
            first = magic_lines[0][len(_MAGIC):].strip()
            kind = first.split()[0] if first else ""
            if kind in {"%pip", "%sql", "%run", "%sh", "%scala", "%r"}:
                warnings.warn(f"{path}: skipping a {kind} cell ({first[:60]!r}); it does not run in a local "
                              "pipeline", stacklevel=3)
            out.extend("" for _ in cell)
        else:
            out.extend(cell)
        cell.clear()

    for line in lines:
        if line.strip() == CELL_SEPARATOR or line.startswith(NOTEBOOK_HEADER):
            flush()
            out.append("")
        else:
            cell.append(line)
    flush()
    return "\n".join(out) + "\n"

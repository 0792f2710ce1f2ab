"""Databricks notebook sources → Python with the same line numbers (framework.notebook)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from framework.notebook import is_notebook_source, notebook_to_python

NOTEBOOK = Path(__file__).parent / "fixtures" / "basic" / "pipelines" / "nb_gold.py"


def convert(text: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return notebook_to_python(text)


def test_detects_the_header() -> None:
    assert is_notebook_source("# Databricks notebook source\nx = 1\n")
    assert is_notebook_source("\ufeff# Databricks notebook source\n")
    assert not is_notebook_source("import dlt\n# Databricks notebook source\n")
    assert not is_notebook_source("")


def test_line_count_and_python_lines_are_kept() -> None:
    text = NOTEBOOK.read_text()
    out = convert(text)
    original, converted = text.splitlines(), out.splitlines()
    assert len(converted) == len(original)
    for before, after in zip(original, converted, strict=True):
        if before.startswith("# MAGIC") or before.startswith("# COMMAND") or before.startswith("# Databricks"):
            assert after == ""
        else:
            assert after == before


def test_markdown_pip_and_sql_cells_are_blanked() -> None:
    out = convert(NOTEBOOK.read_text())
    assert "%md" not in out and "%pip" not in out and "%sql" not in out and "MAGIC" not in out
    assert "import dlt" in out and "def gold_summary" in out
    compile(out, str(NOTEBOOK), "exec")


@pytest.mark.parametrize("magic", ["%pip install x", "%sql SELECT 1", "%run ./other", "%sh ls"])
def test_skipped_code_magics_warn(magic) -> None:
    text = f"# Databricks notebook source\n# MAGIC {magic}\n\n# COMMAND ----------\n\nx = 1\n"
    with pytest.warns(UserWarning, match=f"skipping a {magic.split()[0]} cell"):
        out = notebook_to_python(text, "nb.py")
    assert out.splitlines()[5] == "x = 1"


def test_markdown_cells_do_not_warn() -> None:
    text = "# Databricks notebook source\n# MAGIC %md\n# MAGIC # Title\n# MAGIC\n\n# COMMAND ----------\n\nx = 1\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = notebook_to_python(text)
    assert out.splitlines() == ["", "", "", "", "", "", "", "x = 1"]


def test_python_cell_with_a_magic_comment_is_kept() -> None:
    text = "# Databricks notebook source\nx = 1\n# MAGIC this is only a comment here\ny = 2\n"
    out = convert(text)
    assert out.splitlines()[1:] == ["x = 1", "# MAGIC this is only a comment here", "y = 2"]


def test_separator_with_trailing_spaces() -> None:
    text = ("# Databricks notebook source\nx = 1\n# COMMAND ----------   \n# MAGIC %md\n# MAGIC hi\n"
            "  # COMMAND ----------\ny = 2\n")
    out = convert(text).splitlines()
    assert out == ["", "x = 1", "", "", "", "", "y = 2"]


def test_error_lines_match_the_notebook() -> None:
    text = "# Databricks notebook source\n# MAGIC %md\n# MAGIC # T\n\n# COMMAND ----------\n\nraise KeyError('k')\n"
    code = compile(convert(text), "nb.py", "exec")
    with pytest.raises(KeyError) as info:
        exec(code, {})
    assert info.traceback[-1].lineno + 1 == 7  # pytest's traceback lines are 0-based

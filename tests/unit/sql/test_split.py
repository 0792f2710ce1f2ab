"""Splitting SQL libraries into statements: Spark's lexical rules, SQL notebook cells, positions in the file."""

from __future__ import annotations

import warnings

import pytest

from framework.errors import PipelineError, SqlSyntaxError
from framework.sql.split import Statement, is_sql_notebook, split_statements


def texts(source: str) -> list[str]:
    return [statement.text for statement in split_statements(source, "lib.sql")]


def locate(source: str, needle: str, occurrence: int = 1) -> tuple[int, int]:
    """The (line, column) of the ``occurrence``-th ``needle`` in ``source``, counted by hand."""
    at = -1
    for _ in range(occurrence):
        at = source.index(needle, at + 1)
    line = source.count("\n", 0, at) + 1
    return line, at - (source.rfind("\n", 0, at) + 1) + 1


# ------------------------------------------------------------------------------------------------ plain files
def test_semicolons_end_statements_and_a_last_statement_needs_none() -> None:
    assert texts("SELECT 1;\nSELECT 2;SELECT 3\n") == ["SELECT 1", "SELECT 2", "SELECT 3"]


@pytest.mark.parametrize("quoted", ["'a;b -- c /* d'", '"a;b -- c /* d"', "`a;b -- c /* d`"])
def test_semicolons_and_comment_markers_inside_quotes_are_text(quoted: str) -> None:
    assert texts(f"SELECT {quoted} AS x; SELECT 2") == [f"SELECT {quoted} AS x", "SELECT 2"]


@pytest.mark.parametrize("quoted", [r"'it\'s; still'", r'"say \"hi;\" then"', "'back\\\\'", "'it''s; still'",
                                    '"a"";b"', "`odd``;name`"])
def test_escaped_and_doubled_quotes_do_not_close_the_quote(quoted: str) -> None:
    assert texts(f"SELECT {quoted}; SELECT 2") == [f"SELECT {quoted}", "SELECT 2"]


def test_backslashes_do_not_escape_in_quoted_identifiers_and_raw_strings() -> None:
    assert texts("SELECT `a\\`; SELECT r'C:\\'; SELECT R\"x\\\"; SELECT 4") == [
        "SELECT `a\\`", "SELECT r'C:\\'", "SELECT R\"x\\\"", "SELECT 4"]


def test_an_identifier_ending_in_r_before_a_quote_is_not_a_raw_string_prefix() -> None:
    # `bar` then the literal '\';x' (backslash escape): to Spark, one statement
    assert texts("SELECT bar'\\';x'; SELECT 2") == ["SELECT bar'\\';x'", "SELECT 2"]


def test_line_comments_hide_semicolons_and_a_trailing_backslash_continues_them() -> None:
    source = "SELECT 1 -- not the end;\n, 2;\n-- continued \\\n; still a comment\nSELECT 3"
    assert texts(source) == ["SELECT 1 -- not the end;\n, 2", "SELECT 3"]


def test_nested_block_comments_hide_semicolons() -> None:
    source = "SELECT /* outer; /* inner; */ still outer; */ 1; SELECT 2"
    assert texts(source) == ["SELECT /* outer; /* inner; */ still outer; */ 1", "SELECT 2"]


def test_a_hint_is_not_a_comment() -> None:
    assert texts("SELECT /*+ REPARTITION(2) */ * FROM t; SELECT 2") == [
        "SELECT /*+ REPARTITION(2) */ * FROM t", "SELECT 2"]


def test_parentheses_do_not_hide_semicolons() -> None:
    assert texts("SELECT (1;\n2)") == ["SELECT (1", "2)"]


def test_empty_and_comment_only_statements_are_dropped() -> None:
    source = "-- header\n;;\n/* only a comment */;\n  \nSELECT 1;\n-- trailing comment\n"
    assert texts(source) == ["SELECT 1"]
    assert split_statements("", "empty.sql") == []


def test_leading_and_trailing_comments_and_whitespace_are_stripped_inner_ones_kept() -> None:
    source = "\n  -- about x\n  /* more */ CREATE VIEW x AS\n  SELECT 1 -- one\n  , 2 /* two */\n;"
    assert texts(source) == ["CREATE VIEW x AS\n  SELECT 1 -- one\n  , 2"]


def test_crlf_line_endings() -> None:
    source = "-- c\r\nSELECT 'a;b'\r\n  FROM t;\r\nSELECT\r\n  2\r\n"
    statements = split_statements(source, "crlf.sql")
    assert [s.text for s in statements] == ["SELECT 'a;b'\n  FROM t", "SELECT\n  2"]
    assert [(s.line, s.column) for s in statements] == [(2, 1), (4, 1)]
    assert statements[1].offset == source.index("SELECT\r\n")
    assert statements[0].position(statements[0].text.index("FROM")) == (3, 3)
    assert statements[1].position(statements[1].text.index("2")) == (5, 3)


def test_a_lone_carriage_return_ends_a_line_comment_as_in_spark() -> None:
    assert texts("-- old mac\rSELECT 1") == ["SELECT 1"]


def test_byte_order_mark_is_not_a_column() -> None:
    statement = split_statements("\ufeffSELECT 1", "bom.sql")[0]
    assert (statement.text, statement.line, statement.column, statement.offset) == ("SELECT 1", 1, 1, 1)


# ------------------------------------------------------------------------------------------------ positions
def test_positions_of_statements_and_of_an_index_inside_one() -> None:
    source = "-- orders\nCREATE VIEW a AS SELECT 1;  CREATE VIEW b AS\n  SELECT x\n    FROM t;\n"
    first, second = split_statements(source, "pos.sql")
    assert (first.file, first.line, first.column, first.offset) == ("pos.sql", 2, 1, source.index("CREATE VIEW a"))
    assert (second.line, second.column) == locate(source, "CREATE VIEW b")
    assert second.offset == source.index("CREATE VIEW b")
    assert source[second.offset:].startswith(second.text.splitlines()[0])
    assert second.position(second.text.index("FROM")) == locate(source, "FROM")
    assert second.position(second.text.index("x")) == locate(source, "x\n")
    assert second.position(0) == (second.line, second.column)


def test_position_of_a_statement_built_by_hand() -> None:
    statement = Statement("SELECT\n  x", "f.sql", 3, 5, 40)
    assert statement.position(2) == (3, 7) and statement.position(9) == (4, 3)


# --------------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(("source", "opening"), [
    ("SELECT 1;\nSELECT 'never closed;\nSELECT 3", "'never"),
    ("SELECT 1;\nSELECT \"x\\\";", '"x'),
    ("SELECT `name;\n", "`name"),
    ("SELECT 1; /* outer /* inner */ still open;\nSELECT 2", "/* outer"),
])
def test_unterminated_quotes_and_comments_are_syntax_errors_at_their_opening(source: str, opening: str) -> None:
    with pytest.raises(SqlSyntaxError) as info:
        split_statements(source, "bad.sql")
    err = info.value
    line, column = locate(source, opening)
    assert (err.code, err.file, err.line, err.column) == ("SQL_SYNTAX_ERROR", "bad.sql", line, column)
    assert f"bad.sql:{line}:{column}:" in str(err)
    assert isinstance(err, PipelineError)


# ------------------------------------------------------------------------------------------------ notebooks
NOTEBOOK = """\
-- Databricks notebook source
-- MAGIC %md
-- MAGIC # Orders; a title with a semicolon
-- MAGIC SELECT 'not sql';

-- COMMAND ----------

-- DBTITLE 1,Bronze
CREATE OR REFRESH STREAMING TABLE bronze
AS SELECT * FROM STREAM read_files('/data', format => 'json')

-- COMMAND ----------

-- MAGIC %python
-- MAGIC print("not; sql")

-- COMMAND ----------

-- MAGIC %sql
-- MAGIC CREATE OR REFRESH MATERIALIZED VIEW silver
-- MAGIC AS SELECT id,
-- MAGIC   amount FROM bronze; SELECT 'second'

-- COMMAND ----------

CREATE VIEW gold AS SELECT 1
"""


def test_is_sql_notebook() -> None:
    assert is_sql_notebook(NOTEBOOK) and is_sql_notebook("\ufeff" + NOTEBOOK)
    assert not is_sql_notebook("# Databricks notebook source\n") and not is_sql_notebook("SELECT 1")


def test_notebook_cells_markdown_sql_magic_and_python() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        statements = split_statements(NOTEBOOK, "nb.sql")
    assert [s.text for s in statements] == [
        "CREATE OR REFRESH STREAMING TABLE bronze\nAS SELECT * FROM STREAM read_files('/data', format => 'json')",
        "CREATE OR REFRESH MATERIALIZED VIEW silver\nAS SELECT id,\n  amount FROM bronze",
        "SELECT 'second'",
        "CREATE VIEW gold AS SELECT 1",
    ]
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "skipping a %python cell" in messages[0]
    assert messages[0].startswith(f"nb.sql:{locate(NOTEBOOK, '%python')[0]}:")


def test_notebook_positions_refer_to_the_file_with_magic_prefixes() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bronze, silver, second, gold = split_statements(NOTEBOOK, "nb.sql")
    assert (bronze.line, bronze.column) == locate(NOTEBOOK, "CREATE OR REFRESH STREAMING")
    assert (silver.line, silver.column) == locate(NOTEBOOK, "CREATE OR REFRESH MATERIALIZED")
    assert silver.column == len("-- MAGIC ") + 1
    assert silver.offset == NOTEBOOK.index("CREATE OR REFRESH MATERIALIZED")
    assert silver.position(silver.text.index("amount")) == locate(NOTEBOOK, "amount")
    assert silver.position(silver.text.index("id,")) == locate(NOTEBOOK, "id,")
    assert (second.line, second.column) == locate(NOTEBOOK, "SELECT 'second'")
    assert second.offset == NOTEBOOK.index("SELECT 'second'")
    assert (gold.line, gold.column) == locate(NOTEBOOK, "CREATE VIEW gold")


def test_a_cell_boundary_ends_a_statement() -> None:
    source = "-- Databricks notebook source\nSELECT 1\n\n-- COMMAND ----------\n\nSELECT 2\n"
    assert texts(source) == ["SELECT 1", "SELECT 2"]


@pytest.mark.parametrize("magic", ["%sh", "%pip", "%run", "%scala"])
def test_other_magic_cells_are_skipped_with_a_warning(magic: str) -> None:
    source = f"-- Databricks notebook source\n-- MAGIC {magic} something; here\n\n-- COMMAND ----------\nSELECT 1"
    with pytest.warns(UserWarning, match=f"skipping a {magic} cell"):
        assert texts(source) == ["SELECT 1"]


def test_markdown_cells_are_skipped_silently() -> None:
    source = "-- Databricks notebook source\n-- MAGIC %md-sandbox\n-- MAGIC <b>;</b>\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert texts(source) == []


def test_an_unterminated_string_does_not_run_past_its_cell() -> None:
    source = "-- Databricks notebook source\n-- MAGIC %sql\n-- MAGIC SELECT 'open\n-- COMMAND ----------\nSELECT 'x'"
    with pytest.raises(SqlSyntaxError) as info:
        split_statements(source, "nb.sql")
    assert (info.value.line, info.value.column) == locate(source, "'open")


def test_notebook_with_crlf_line_endings() -> None:
    source = "-- Databricks notebook source\r\n-- MAGIC %sql\r\n-- MAGIC SELECT 1\r\n-- COMMAND ----------\r\nSELECT 2"
    statements = split_statements(source, "nb.sql")
    assert [(s.text, s.line, s.column) for s in statements] == [("SELECT 1", 3, 10), ("SELECT 2", 5, 1)]


def test_only_exact_magic_prefixes_are_magic() -> None:
    source = "-- Databricks notebook source\n-- MAGIC%sh; a comment, not a magic\nSELECT 1\n-- MAGIC\n"
    assert texts(source) == ["SELECT 1"]

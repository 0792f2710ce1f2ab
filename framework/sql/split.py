"""Split a ``.sql`` file or a SQL notebook source into statements, each with its position in the file.

The rules are Spark SQL's lexer's (``SqlBaseLexer.g4``): a ``;`` ends a statement unless it is inside a string
(``'...'``, ``"..."``, with backslash escapes; raw ``r'...'`` / ``r"..."`` without), a quoted identifier
(`` `...` ``, a doubled backquote inside), a ``--`` line comment (a backslash just before the newline continues
it) or a ``/* */`` block comment (nested ones too; ``/*+`` opens a hint, not a comment). Parentheses play no part:
Spark rejects a ``;`` inside them as well. A doubled quote inside a string is two adjacent literals to Spark,
which concatenates them, so it needs no rule of its own here.

SQL notebook sources (``-- Databricks notebook source``) are cells separated by ``-- COMMAND ----------`` lines; a
cell boundary ends a statement. A cell whose ``-- MAGIC`` lines start ``%md`` is documentation and is skipped;
a ``%sql`` cell is SQL once the ``-- MAGIC`` prefixes are removed; other magics (``%python``, ``%sh``, ``%pip``,
``%run``, ...) are skipped with a warning, as for Python notebooks (``framework/notebook.py``). Every position
(line, column, offset) refers to the original file.
"""

from __future__ import annotations

import bisect
import warnings
from dataclasses import dataclass, field

from framework.errors import SqlSyntaxError

SQL_NOTEBOOK_HEADER = "-- Databricks notebook source"
SQL_CELL_SEPARATOR = "-- COMMAND ----------"
_MAGIC = "-- MAGIC"
_DOCUMENTATION_MAGICS = frozenset({"%md", "%md-sandbox"})

# Spark's WS token; anything else outside comments is part of a statement.
_WHITESPACE = frozenset(" \t\n\f\r\u000b\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
                        "\u200a\u2028\u202f\u205f\u3000")


@dataclass(frozen=True)
class _Line:
    """One line of SQL as the splitter sees it, and where its first character sits in the file."""

    text: str
    line: int
    column: int
    offset: int


@dataclass(frozen=True)
class Statement:
    r"""One SQL statement of a library.

    Attributes:
        text: the statement's SQL from its first token to its last (no terminating ``;``, no leading or trailing
            comments and whitespace; comments inside are kept), lines ending in ``\n``.
        file: the file it comes from.
        line: the 1-based line in the file of ``text[0]``.
        column: the 1-based column of ``text[0]`` (a byte order mark is not counted).
        offset: the character offset in the file of ``text[0]``.
    """

    text: str
    file: str
    line: int
    column: int
    offset: int
    # (index in text, line, column, offset) where each line of ``text`` starts in the file
    _starts: tuple[tuple[int, int, int, int], ...] = field(default=(), repr=False, compare=False)

    def position(self, index: int) -> tuple[int, int]:
        """The (line, column) in the file of ``text[index]`` (e.g. where Spark's parser reports an error).

        Args:
            index: a 0-based index into ``text``; ``len(text)`` (just past the end) is accepted too.

        Returns:
            The 1-based line and column in the file, also for notebook cells whose ``-- MAGIC`` prefixes were
            removed from ``text``.
        """
        index = max(0, min(index, len(self.text)))
        if not self._starts:
            newline = self.text.rfind("\n", 0, index)
            if newline < 0:
                return self.line, self.column + index
            return self.line + self.text.count("\n", 0, index), index - newline
        at = bisect.bisect_right([start[0] for start in self._starts], index) - 1
        start, line, column, _offset = self._starts[at]
        return line, column + index - start


def is_sql_notebook(text: str) -> bool:
    """Whether ``text`` is a SQL notebook source exported from a workspace (its first line, after a byte order
    mark, is ``-- Databricks notebook source``)."""
    return text.lstrip("\ufeff").startswith(SQL_NOTEBOOK_HEADER)


def split_statements(source: str, file: str) -> list[Statement]:
    """Split a ``.sql`` file or a SQL notebook source into its statements.

    Args:
        source: the file's text.
        file: its path, kept in each statement and named by errors.

    Returns:
        The statements in file order; empty and comment-only ones are left out.

    Raises:
        SqlSyntaxError: a string, quoted identifier or block comment is not closed (in a notebook: before the
            end of its cell), naming the file, line and column where it opens.
    """
    lines = _file_lines(source)
    chunks = _notebook_chunks(lines, file) if is_sql_notebook(source) else [lines]
    statements: list[Statement] = []
    for chunk in chunks:
        statements.extend(_split_chunk(chunk, file))
    return statements


def _file_lines(source: str) -> list[_Line]:
    r"""The lines of ``source`` (``\n`` or ``\r\n`` ended), each with where it starts in the file."""
    lines: list[_Line] = []
    offset = 1 if source.startswith("\ufeff") else 0
    number = 1
    while True:
        end = source.find("\n", offset)
        text = source[offset:] if end < 0 else source[offset:end]
        lines.append(_Line(text.removesuffix("\r"), number, 1, offset))
        if end < 0:
            return lines
        offset, number = end + 1, number + 1


def _notebook_chunks(lines: list[_Line], file: str) -> list[list[_Line]]:
    """The SQL of each cell of a notebook source, ``-- MAGIC`` prefixes removed; other cells left out."""
    cells: list[list[_Line]] = [[]]
    for item in lines[1:]:  # the first line is the header
        if item.text.strip() == SQL_CELL_SEPARATOR:
            cells.append([])
        else:
            cells[-1].append(item)
    chunks = []
    for cell in cells:
        sql = _cell_sql(cell, file)
        if sql:
            chunks.append(sql)
    return chunks


def _cell_sql(cell: list[_Line], file: str) -> list[_Line] | None:
    """A cell's SQL lines, or None for a cell that is not SQL (markdown, Python, shell, ...)."""
    found = next(((at, _unmagic(item)) for at, item in enumerate(cell)
                  if _is_magic(item) and _unmagic(item).text.strip()), None)
    if found is None:
        return cell
    at, head = found
    command = head.text.split()[0]
    if not command.startswith("%"):
        return cell  # `-- MAGIC` lines without a magic command are plain SQL comments
    if command.lower() in _DOCUMENTATION_MAGICS:
        return None
    if command.lower() != "%sql":
        shown = head.text.strip()[:60]
        warnings.warn(f"{file}:{head.line}: skipping a {command} cell ({shown!r}); a SQL pipeline runs the SQL "
                      "cells of a notebook only", stacklevel=4)
        return None
    sql = [_unmagic(item) for item in cell]
    skip = head.text.index(command) + len(command)
    sql[at] = _Line(head.text[skip:], head.line, head.column + skip, head.offset + skip)
    return sql


def _is_magic(item: _Line) -> bool:
    """Whether ``item`` is a ``-- MAGIC`` line (a line of a magic-command cell)."""
    return item.text == _MAGIC or item.text.startswith(_MAGIC + " ")


def _unmagic(item: _Line) -> _Line:
    """``item`` without its ``-- MAGIC`` prefix (and the one space after it)."""
    if not _is_magic(item):
        return item
    skip = min(len(item.text), len(_MAGIC) + 1)
    return _Line(item.text[skip:], item.line, item.column + skip, item.offset + skip)


def _split_chunk(lines: list[_Line], file: str) -> list[Statement]:
    """Split consecutive lines (a whole file, or one notebook cell) at the semicolons between tokens."""
    text = "\n".join(item.text for item in lines)
    starts = [0]
    for item in lines[:-1]:
        starts.append(starts[-1] + len(item.text) + 1)
    where = _Where(lines, starts, file)
    spans: list[tuple[int, int]] = []
    first: int | None = None
    last = 0
    index = 0
    while index < len(text):
        char = text[index]
        if char in _WHITESPACE:
            index += 1
        elif text.startswith("--", index):
            index = _line_comment_end(text, index)
        elif text.startswith("/*", index) and not text.startswith("/*+", index):
            index = _block_comment_end(text, index, where)
        elif char == ";":
            if first is not None:
                spans.append((first, last))
            first, index = None, index + 1
        else:
            first = index if first is None else first
            index = _token_end(text, index, where)
            last = index
    if first is not None:
        spans.append((first, last))
    return [where.statement(text, begin, end) for begin, end in spans]


def _token_end(text: str, index: int, where: _Where) -> int:
    """Just past the string, quoted identifier or single character at ``index``."""
    char = text[index]
    if char == "`":
        return _quoted_end(text, index, where, escapes=False, what="quoted identifier")
    if char in "'\"":
        raw = index > 0 and text[index - 1] in "rR" and not _is_identifier_char(text, index - 2)
        return _quoted_end(text, index, where, escapes=not raw, what="string literal")
    return index + 1


def _is_identifier_char(text: str, index: int) -> bool:
    """Whether ``text[index]`` continues an identifier (so an ``r`` before a quote is not a raw-string prefix)."""
    return index >= 0 and (text[index].isalnum() or text[index] == "_")


def _quoted_end(text: str, index: int, where: _Where, *, escapes: bool, what: str) -> int:
    """Just past the closing quote of the string or identifier opened at ``index`` (a doubled quote continues
    it: to Spark, two adjacent string literals, or an escaped backquote)."""
    quote = text[index]
    at = index + 1
    while at < len(text):
        char = text[at]
        if (escapes and char == "\\") or (char == quote and text.startswith(quote, at + 1)):
            at += 2
        elif char == quote:
            return at + 1
        else:
            at += 1
    raise where.error(index, f"unterminated {what}: the {quote} opened here is never closed")


def _line_comment_end(text: str, index: int) -> int:
    """Just past the ``--`` comment at ``index``: the rest of its line (a lone carriage return ends it too), and
    the next lines while a line ends in a backslash."""
    at = index + 2
    while at < len(text):
        char = text[at]
        if char == "\\" and text.startswith("\n", at + 1):
            at += 2
        elif char in "\r\n":
            return at + 1
        else:
            at += 1
    return at


def _block_comment_end(text: str, index: int, where: _Where) -> int:
    """Just past the ``*/`` closing the ``/*`` comment at ``index``, nested comments included."""
    depth = 0
    at = index
    while at < len(text):
        if text.startswith("/*", at) and not text.startswith("/*+", at):
            depth += 1
            at += 2
        elif text.startswith("*/", at):
            depth -= 1
            at += 2
            if depth == 0:
                return at
        else:
            at += 1
    raise where.error(index, "unterminated block comment: the /* opened here is never closed by */")


class _Where:
    """Positions in the file of indexes into a chunk's text."""

    def __init__(self, lines: list[_Line], starts: list[int], file: str) -> None:
        self.lines = lines
        self.starts = starts
        self.file = file

    def locate(self, index: int) -> tuple[int, int, int]:
        """The (line, column, offset) in the file of ``text[index]``."""
        at = bisect.bisect_right(self.starts, index) - 1
        item, shift = self.lines[at], index - self.starts[at]
        return item.line, item.column + shift, item.offset + shift

    def error(self, index: int, message: str) -> SqlSyntaxError:
        """A syntax error located at ``text[index]``."""
        line, column, _offset = self.locate(index)
        return SqlSyntaxError(message, file=self.file, line=line, column=column)

    def statement(self, text: str, begin: int, end: int) -> Statement:
        """The statement ``text[begin:end]``, with where each of its lines starts in the file."""
        line, column, offset = self.locate(begin)
        starts = [(0, line, column, offset)]
        first = bisect.bisect_right(self.starts, begin)
        for at in range(first, len(self.starts)):
            if self.starts[at] >= end:
                break
            item = self.lines[at]
            starts.append((self.starts[at] - begin, item.line, item.column, item.offset))
        return Statement(text[begin:end], self.file, line, column, offset, tuple(starts))

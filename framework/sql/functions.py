"""The function name of a SQL function statement: ``CREATE [OR REPLACE] [TEMPORARY] FUNCTION [IF NOT EXISTS]
name``, ``DROP [TEMPORARY] FUNCTION [IF EXISTS] name``, ``DESCRIBE | DESC FUNCTION [EXTENDED] name``.

Spark 4.2 calls a SQL function of any catalog that is a ``FunctionCatalog`` (the framework's catalogs are:
``main.util.f(x)`` needs nothing here), but creates, drops and describes functions only in its session catalog.
The framework's catalog ``c`` keeps its schema ``s`` as the session catalog's database ``c__s``
(``framework/runner/catalogs.py``), so these three statements are given that name: found here on the statement's
tokens (never by a pattern over the text), replaced by ``framework.runner.catalogs.session_function_sql``.
"""

from __future__ import annotations

from dataclasses import dataclass

from framework.sql.tokens import IDENT, PUNCT, WORD, Token, TokenizeError, tokenize


@dataclass(frozen=True)
class FunctionName:
    """The name of a function statement: its parts (unquoted) and where it stands in the statement's text."""

    parts: tuple[str, ...]
    start: int
    end: int


def is_function_statement(text: str) -> bool:
    """Whether ``text`` creates a SQL function (``CREATE [OR REPLACE] [TEMPORARY] FUNCTION ...``)."""
    tokens = _tokens(text)
    return bool(tokens) and tokens[0].is_word("CREATE") and _after_create(tokens, 1) is not None


def function_name(text: str) -> FunctionName | None:
    """The function name of a CREATE, DROP or DESCRIBE FUNCTION statement, else None."""
    tokens = _tokens(text)
    if not tokens:
        return None
    first = tokens[0]
    if first.is_word("CREATE"):
        at = _after_create(tokens, 1)
    elif first.is_word("DROP"):
        at = _skip(tokens, 1, ("TEMPORARY",), ("TEMP",))
        at = _skip(tokens, at + 1, ("IF", "EXISTS")) if _word(tokens, at, "FUNCTION") else None
    elif first.is_word("DESCRIBE", "DESC"):
        at = _skip(tokens, 2, ("EXTENDED",)) if _word(tokens, 1, "FUNCTION") else None
    else:
        at = None
    return _name(tokens, at) if at is not None else None


def schema_catalog(text: str) -> str | None:
    """The catalog of ``CREATE SCHEMA | DATABASE | NAMESPACE [IF NOT EXISTS] catalog.schema``, else None (Spark's
    session catalog has one level of schemas: a two-part schema name can only name a catalog's schema)."""
    tokens = _tokens(text)
    if len(tokens) < 3 or not tokens[0].is_word("CREATE") or not tokens[1].is_word("SCHEMA", "DATABASE",
                                                                                    "NAMESPACE"):
        return None
    name = _name(tokens, _skip(tokens, 2, ("IF", "NOT", "EXISTS")))
    return name.parts[0] if name is not None and len(name.parts) == 2 else None


def _after_create(tokens: list[Token], at: int) -> int | None:
    """The index of the name after ``CREATE`` (``at``: the token after it), or None when no FUNCTION follows."""
    at = _skip(tokens, at, ("OR", "REPLACE"))
    at = _skip(tokens, at, ("TEMPORARY",), ("TEMP",))
    if not _word(tokens, at, "FUNCTION"):
        return None
    return _skip(tokens, at + 1, ("IF", "NOT", "EXISTS"))


def _tokens(text: str) -> list[Token]:
    try:
        return tokenize(text)
    except TokenizeError:
        return []  # Spark's parser reports it


def _word(tokens: list[Token], at: int, word: str) -> bool:
    return at < len(tokens) and tokens[at].is_word(word)


def _skip(tokens: list[Token], at: int, *sequences: tuple[str, ...]) -> int:
    """``at`` moved past the first of ``sequences`` (words) found there."""
    for words in sequences:
        if all(_word(tokens, at + k, w) for k, w in enumerate(words)):
            return at + len(words)
    return at


def _name(tokens: list[Token], at: int) -> FunctionName | None:
    """The dotted name that starts at token ``at``."""
    parts: list[str] = []
    start = end = None
    while at < len(tokens) and tokens[at].kind in (WORD, IDENT):
        parts.append(tokens[at].value)
        start = tokens[at].start if start is None else start
        end = tokens[at].end
        if not (at + 1 < len(tokens) and tokens[at + 1].kind == PUNCT and tokens[at + 1].value == "."):
            break
        at += 2
    if start is None or end is None:
        return None
    return FunctionName(tuple(parts), start, end)

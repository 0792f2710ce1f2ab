"""Syntax mistakes in a SQL query found without Spark (``validate --static``): the ones a token stream shows.

Spark's parser is the judge of a query (``validate`` without ``--static`` runs it); this module has no grammar
of its own. It finds mistakes a token stream shows: an unterminated quote or comment, unbalanced parentheses, a
query that does not start like one, a clause keyword where an expression or a name must come
(``SELECT a, FROM t``, ``FROM WHERE``), and a query that ends where more must follow (``WHERE``, ``AND``, ``=``,
a trailing comma). Spark lets most keywords be names unquoted (a column ``from``): such a name in those places
is reported too, and its fix is Spark's own advice, backticks (```from```). Pure Python.
"""

from __future__ import annotations

import itertools

from framework.sql.tokens import PUNCT, WORD, Token, TokenizeError, tokenize

_STARTS = frozenset({"SELECT", "WITH", "FROM", "VALUES", "TABLE", "MAP", "REDUCE"})
# clause keywords that start a clause: never an expression, a name or the end of one
_CLAUSES = frozenset({"FROM", "WHERE", "GROUP", "ORDER", "HAVING", "LIMIT"})
# words after which something must follow, and that nothing in _CLAUSES may follow
_NEEDS_MORE = frozenset(
    {
        "SELECT",
        "FROM",
        "WHERE",
        "AND",
        "OR",
        "NOT",
        "ON",
        "BY",
        "JOIN",
        "HAVING",
        "LIMIT",
        "IN",
        "IS",
        "LIKE",
        "BETWEEN",
        "UNION",
        "INTERSECT",
        "EXCEPT",
        "WHEN",
        "THEN",
        "ELSE",
        "CASE",
        "DISTINCT",
        "AS",
    }
)
_OPERATORS = frozenset({",", "=", "<", ">", "+", "-", "/", "%", "|", "&", "^", "!"})


def syntax_problems(text: str) -> list[tuple[int, str]]:
    """The syntax mistakes of the query ``text`` that are certain without a parser, each as (offset in
    ``text``, message); empty when none is seen (which does not make the query valid: Spark's parser decides)."""
    try:
        tokens = tokenize(text)
    except TokenizeError as exc:
        return [(exc.offset, str(exc))]
    if not tokens:
        return [(0, "the query is empty")]
    problems = _parentheses(tokens)
    first = tokens[0]
    if not (first.kind == PUNCT and first.value == "(") and not first.is_word(*_STARTS):
        problems.append(
            (
                first.start,
                f"syntax error at or near '{first.value}': a query starts with SELECT, "
                "WITH, FROM, VALUES or TABLE",
            )
        )
    for before, token in itertools.pairwise(tokens):
        if _dangles(before) and (token.is_word(*_CLAUSES) or _closes(token)):
            problems.append(
                (
                    token.start,
                    f"syntax error at or near '{token.value}': '{before.value}' must be "
                    "followed by an expression or a name (a name spelled like a keyword "
                    "needs backticks)",
                )
            )
    last = tokens[-1]
    if _dangles(last):
        problems.append(
            (last.start, f"syntax error at the end of the query: '{last.value}' must be followed by more")
        )
    return sorted(problems)


def _dangles(token: Token) -> bool:
    """Whether something other than a clause keyword must follow ``token``."""
    if token.kind == PUNCT:
        return token.value in _OPERATORS
    return token.kind == WORD and token.value.upper() in _NEEDS_MORE


def _closes(token: Token) -> bool:
    return token.kind == PUNCT and token.value == ")"


def _parentheses(tokens: list[Token]) -> list[tuple[int, str]]:
    """A ``)`` without its ``(``, and each ``(`` left open at the end."""
    open_at: list[int] = []
    problems: list[tuple[int, str]] = []
    for token in tokens:
        if token.kind != PUNCT:
            continue
        if token.value == "(":
            open_at.append(token.start)
        elif token.value == ")":
            if open_at:
                open_at.pop()
            else:
                problems.append((token.start, "syntax error at or near ')': no '(' to close"))
    problems += [(start, "syntax error: this '(' is never closed") for start in open_at]
    return problems

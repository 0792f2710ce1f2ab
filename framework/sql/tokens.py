"""Tokens of a DLT SQL statement's envelope: words, quoted identifiers, strings, numbers and punctuation, each
with its offset in the statement (so errors can name the line and column)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

WORD, IDENT, STRING, NUMBER, PUNCT = "word", "ident", "string", "number", "punct"
_PUNCT = set("(),.=;*<>!+-/%[]{}:|&^~")


@dataclass(frozen=True)
class Token:
    """One token: ``kind``, ``value`` (unquoted for identifiers and strings), ``start``/``end`` offsets."""

    kind: str
    value: str
    start: int
    end: int

    def is_word(self, *words: str) -> bool:
        """True for an unquoted word equal (case-insensitive) to one of ``words``."""
        return self.kind == WORD and self.value.upper() in words


class TokenizeError(ValueError):
    """The statement has an unterminated quote (the splitter reports these with the file position first)."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def tokenize(text: str) -> list[Token]:
    """Every token of ``text``; comments and white space are skipped."""
    return list(_tokens(text))


def _tokens(text: str) -> Iterator[Token]:
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            i = _block_comment_end(text, i)
        elif ch in "'\"`":
            end, value = _quoted(text, i)
            yield Token(IDENT if ch == "`" else STRING, value, i, end)
            i = end
        elif ch.isalpha() or ch == "_" or ch == "$":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] in "_$"):
                j += 1
            yield Token(WORD, text[i:j], i, j)
            i = j
        elif ch.isdigit():
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "."):
                j += 1
            yield Token(NUMBER, text[i:j], i, j)
            i = j
        else:
            yield Token(PUNCT, ch, i, i + 1)
            i += 1


def _block_comment_end(text: str, start: int) -> int:
    depth, i = 0, start
    while i < len(text):
        if text.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*/", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    raise TokenizeError("unterminated block comment", start)


def _quoted(text: str, start: int) -> tuple[int, str]:
    """The end offset and the unquoted value of the quoted token at ``start``."""
    quote = text[start]
    out: list[str] = []
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and quote != "`" and i + 1 < len(text):
            out.append(_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
        elif ch == quote:
            if text[i + 1:i + 2] == quote:
                out.append(quote)
                i += 2
            else:
                return i + 1, "".join(out)
        else:
            out.append(ch)
            i += 1
    kind = "quoted identifier" if quote == "`" else "string"
    raise TokenizeError(f"unterminated {kind} (opened with {quote})", start)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}

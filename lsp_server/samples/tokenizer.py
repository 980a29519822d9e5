"""A small tokenizer for arithmetic and configuration expressions."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    """What a token is."""

    NUMBER = "number"
    NAME = "name"
    STRING = "string"
    OP = "op"
    LPAREN = "("
    RPAREN = ")"
    COMMA = ","
    END = "end"


@dataclass(frozen=True)
class Token:
    """One token and where it starts (1-based)."""

    kind: Kind
    text: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.kind.value}:{self.text!r}@{self.line}:{self.column}"


class TokenizeError(Exception):
    """The source cannot be tokenized at the given place."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"{line}:{column}: {message}")
        self.line = line
        self.column = column


OPERATORS = ("**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "<", ">", "=")
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
NUMBER_RE = re.compile(r"\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?")
SINGLE = {"(": Kind.LPAREN, ")": Kind.RPAREN, ",": Kind.COMMA}


def read_string(source: str, start: int, line: int, column: int) -> tuple[str, int]:
    """Read a quoted string starting at ``start``; return it and the next offset."""
    quote = source[start]
    pos = start + 1
    chars: list[str] = []
    while pos < len(source):
        ch = source[pos]
        if ch == "\\" and pos + 1 < len(source):
            nxt = source[pos + 1]
            chars.append({"n": "\n", "t": "\t"}.get(nxt, nxt))
            pos += 2
            continue
        if ch == quote:
            return "".join(chars), pos + 1
        if ch == "\n":
            break
        chars.append(ch)
        pos += 1
    raise TokenizeError("unterminated string", line, column)


def tokenize(source: str) -> Iterator[Token]:
    """Yield the tokens of ``source``, ending with an END token."""
    pos = 0
    line = 1
    line_start = 0
    while pos < len(source):
        ch = source[pos]
        column = pos - line_start + 1
        if ch == "\n":
            line += 1
            pos += 1
            line_start = pos
            continue
        if ch.isspace():
            pos += 1
            continue
        if ch == "#":
            end = source.find("\n", pos)
            pos = len(source) if end < 0 else end
            continue
        if ch in "\"'":
            text, pos = read_string(source, pos, line, column)
            yield Token(Kind.STRING, text, line, column)
            continue
        match = NUMBER_RE.match(source, pos)
        if match and (ch.isdigit() or ch == "."):
            yield Token(Kind.NUMBER, match.group(), line, column)
            pos = match.end()
            continue
        match = NAME_RE.match(source, pos)
        if match:
            yield Token(Kind.NAME, match.group(), line, column)
            pos = match.end()
            continue
        if ch in SINGLE:
            yield Token(SINGLE[ch], ch, line, column)
            pos += 1
            continue
        for op in OPERATORS:
            if source.startswith(op, pos):
                yield Token(Kind.OP, op, line, column)
                pos += len(op)
                break
        else:
            raise TokenizeError(f"unexpected character {ch!r}", line, column)
    yield Token(Kind.END, "", line, pos - line_start + 1)


def count_kinds(source: str) -> dict[Kind, int]:
    """How many tokens of each kind ``source`` has."""
    counts: dict[Kind, int] = {}
    for token in tokenize(source):
        counts[token.kind] = counts.get(token.kind, 0) + 1
    return counts


def names(source: str) -> list[str]:
    """The distinct names in ``source``, in order of appearance."""
    seen: list[str] = []
    for token in tokenize(source):
        if token.kind is Kind.NAME and token.text not in seen:
            seen.append(token.text)
    return seen

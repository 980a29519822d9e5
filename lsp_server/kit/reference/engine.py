"""The reference service's deterministic completion engine.

Given a fill-in-the-middle prompt, the engine finds the longest tail of the
prefix (``MIN_MATCH`` to ``MAX_MATCH`` characters) that occurs in the indexed
corpus and answers with the text that follows it there: the rest of that
line, or, when the cursor sits at the start of an indented block body (or
the caller asks for ``multiline``), up to ``MAX_BLOCK_LINES`` lines of the
block, stopping at a dedent. No match means an empty completion, which is a
valid answer.

Index: every position of the corpus is filed under the ``GRAM``-character
string that starts there (compact ``array`` per gram). A lookup for a
window of length ``w`` verifies candidates of the *rarest* gram inside the
window only, so common grams such as four spaces never cost a scan; windows
shrink from ``MAX_MATCH`` down until one matches, then the best candidate is
extended backwards. On code corpora a lookup visits a handful of candidates.

Tokens: a token is an optional whitespace run followed by a word or one
punctuation character (``TOKEN_PATTERN``); whitespace at the very end is a
token of its own. Concatenating the tokens of a text gives the text back, so
streaming deltas are tokens and ``max_tokens`` counts them.

Probabilities (an engine started with ``probabilities``, ``scopecache upstream
--probabilities``, asked with ``probabilities=True``): a token's probability is
the share of the corpus places that continue the same way, among those that
matched the prompt's tail and agree with the answer so far (at most
``MAX_ALTERNATIVES`` places). A continuation the corpus has once is sure
(1.0) throughout; where two copies of the matched text go on differently,
the token where they part has 0.5, so tests can exercise cuts without a model.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

GRAM = 4
MIN_MATCH = 4
#: long enough that two functions with identical bodies are told apart by
#: their headers a few lines up, as a real model with a long prompt would
MAX_MATCH = 400
MAX_BLOCK_LINES = 4
#: corpus places weighed for a token's probability
MAX_ALTERNATIVES = 64
#: separates documents in the concatenated corpus; never part of a match
DOC_SEPARATOR = "\x00"

TOKEN_PATTERN = re.compile(r"\s*(?:\w+|[^\w\s])|\s+")
_WINDOWS = (MAX_MATCH, 200, 96, 48, 24, 12, 8, MIN_MATCH)


def split_tokens(text: str) -> list[str]:
    """Split ``text`` into tokens whose concatenation is ``text``."""
    return TOKEN_PATTERN.findall(text)


def count_tokens(text: str) -> int:
    """Number of tokens in ``text`` (see the module docstring)."""
    return sum(1 for _ in TOKEN_PATTERN.finditer(text))


@dataclass(frozen=True)
class Completion:
    """The engine's answer to one prompt."""

    text: str
    #: ``"stop"`` (natural end or a stop sequence) or ``"length"`` (max_tokens)
    finish_reason: str
    prompt_tokens: int
    #: how many characters of the prompt's tail matched the corpus (0: none)
    matched_chars: int = 0
    #: each token's probability, in ``tokens`` order (empty: not asked for)
    probabilities: tuple[float, ...] = ()

    @property
    def completion_tokens(self) -> int:
        """Tokens in the completion text."""
        return count_tokens(self.text)

    @property
    def tokens(self) -> list[str]:
        """The completion as stream deltas."""
        return split_tokens(self.text)


class CorpusEngine:
    """Longest-match continuation over an in-memory corpus."""

    def __init__(self, documents: Iterable[str] = ()) -> None:
        self._parts: list[str] = []
        #: give token probabilities when asked (off: a service that gives none)
        self.probabilities = False
        self._text = DOC_SEPARATOR
        self._index: dict[str, array[int]] = {}
        for doc in documents:
            self._parts.append(doc.replace(DOC_SEPARATOR, " "))
        self._rebuild()

    def __repr__(self) -> str:
        return f"<CorpusEngine documents={len(self._parts)} chars={len(self._text)}>"

    @property
    def size(self) -> int:
        """Characters indexed."""
        return len(self._text)

    @property
    def documents(self) -> int:
        """Documents indexed."""
        return len(self._parts)

    def add_documents(self, documents: Iterable[str]) -> None:
        """Index more documents (rebuilds the index)."""
        self._parts.extend(doc.replace(DOC_SEPARATOR, " ") for doc in documents)
        self._rebuild()

    def _rebuild(self) -> None:
        text = DOC_SEPARATOR + DOC_SEPARATOR.join(self._parts) + DOC_SEPARATOR
        index: dict[str, array[int]] = {}
        for pos in range(len(text) - GRAM + 1):
            gram = text[pos : pos + GRAM]
            bucket = index.get(gram)
            if bucket is None:
                bucket = index[gram] = array("l")
            bucket.append(pos)
        self._text = text
        self._index = index

    # -- matching ------------------------------------------------------------

    def longest_match(self, prefix: str) -> tuple[int, int]:
        """``(end, length)`` of the longest tail of ``prefix`` found in the corpus.

        ``end`` is the corpus position just after the match; ``(0, 0)`` when
        nothing of at least ``MIN_MATCH`` characters matches. Ties go to the
        earliest position, so answers are deterministic.
        """
        tail = prefix[-MAX_MATCH:]
        if DOC_SEPARATOR in tail:
            tail = tail.rsplit(DOC_SEPARATOR, 1)[1]
        windows = [len(tail)] + [w for w in _WINDOWS if w < len(tail)]
        for window in windows:
            if window < MIN_MATCH:
                break
            ends = self._ends_matching(tail[-window:])
            if ends:
                return self._extend(tail, ends, window)
        return (0, 0)

    def _ends_matching(self, needle: str) -> list[int]:
        """Corpus end positions of every occurrence of ``needle``."""
        text = self._text
        best: array[int] | None = None
        best_offset = 0
        for offset in range(0, len(needle) - GRAM + 1, GRAM):
            bucket = self._index.get(needle[offset : offset + GRAM])
            if bucket is None:
                return []
            if best is None or len(bucket) < len(best):
                best, best_offset = bucket, offset
        if best is None:
            return []
        n = len(needle)
        found: list[int] = []
        for pos in best:
            start = pos - best_offset
            if start >= 0 and text[start : start + n] == needle:
                found.append(start + n)
        return found

    def _extend(self, tail: str, ends: list[int], known: int) -> tuple[int, int]:
        text = self._text
        best_end, best_len = ends[0], known
        for end in ends:
            length = known
            while length < len(tail) and end - length - 1 >= 0:
                if text[end - length - 1] != tail[-length - 1]:
                    break
                length += 1
            if length > best_len:
                best_end, best_len = end, length
        return best_end, best_len

    # -- continuation --------------------------------------------------------

    def complete(
        self,
        prefix: str,
        suffix: str = "",
        *,
        max_tokens: int | None = None,
        stop: Iterable[str] = (),
        multiline: bool | None = None,
        probabilities: bool = False,
    ) -> Completion:
        """Continue ``prefix``; ``multiline=None`` means detect a block opener.

        With ``probabilities``, each token's probability comes along
        (see the module docstring).
        """
        prompt_tokens = count_tokens(prefix) + count_tokens(suffix)
        end, length = self.longest_match(prefix)
        if length == 0:
            return Completion("", "stop", prompt_tokens, 0)
        if multiline is None:
            multiline = opens_block(prefix)
        text = self._continuation(end, multiline)
        finish = "stop"
        for seq in stop:
            cut = text.find(seq) if seq else -1
            if cut >= 0:
                text = text[:cut]
        if max_tokens is not None and max_tokens >= 0:
            tokens = split_tokens(text)
            if len(tokens) > max_tokens:
                text = "".join(tokens[:max_tokens])
                finish = "length"
        if not (probabilities and self.probabilities):
            return Completion(text, finish, prompt_tokens, length)
        shares = self._shares(prefix[-length:], end, text)
        return Completion(text, finish, prompt_tokens, length, shares)

    def _shares(self, matched: str, end: int, text: str) -> tuple[float, ...]:
        """Each token's share of the corpus places that agree with ``text`` before it."""
        corpus = self._text
        places = [e for e in self._ends_matching(matched) if e != end][: MAX_ALTERNATIVES - 1]
        places.append(end)
        shares = []
        offset = 0
        for token in split_tokens(text):
            upto = offset + len(token)
            agreeing = [p for p in places if corpus[p + offset : p + upto] == token]
            shares.append(len(agreeing) / len(places))
            places = agreeing or [end]
            offset = upto
        return tuple(shares)

    def _continuation(self, end: int, multiline: bool) -> str:
        text = self._text
        line_end = _line_end(text, end)
        first = text[end:line_end]
        if not multiline:
            return first
        # The body's indentation is that of the line the match ends on.
        line_start = text.rfind("\n", 0, end) + 1
        body_indent = _indent_width(text[line_start:line_end])
        lines = [first]
        pos = line_end
        while len(lines) < MAX_BLOCK_LINES and pos < len(text) and text[pos] == "\n":
            nxt_end = _line_end(text, pos + 1)
            line = text[pos + 1 : nxt_end]
            if line.strip() and _indent_width(line) < body_indent:
                break
            lines.append(line)
            pos = nxt_end
        while len(lines) > 1 and not lines[-1].strip():
            lines.pop()
        return "\n".join(lines)


def opens_block(prefix: str) -> bool:
    """True when the cursor starts an indented body after a line opening a block.

    A line opens a block when it ends with ``:`` (Python), ``{`` (C-likes) or
    the words ``do``/``then`` (Ruby, Lua, shell); the server's own, exact
    judgement arrives as the ``multiline`` hint.
    """
    last_nl = prefix.rfind("\n")
    if last_nl < 0 or prefix[last_nl + 1 :].strip():
        return False
    before = prefix[:last_nl].rstrip()
    if before.endswith((":", "{")):
        return True
    words = before.rsplit(None, 1)
    return bool(words) and words[-1] in ("do", "then")


def _line_end(text: str, pos: int) -> int:
    newline = text.find("\n", pos)
    if newline < 0:
        newline = len(text)
    separator = text.find(DOC_SEPARATOR, pos, newline)
    return newline if separator < 0 else separator


def _indent_width(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))

"""Cache keys built from plain values the server derives at the cursor.

``ScopeKey`` is the exact key: the language, the structural part
(``scopeDepth-nodeType-parentType``), a fingerprint of the scope-local text
before the cursor and a fingerprint of the suffix the prompt uses. The
structural part alone is never enough (two functions share it); the
fingerprints make it exact, and because they cover only scope-local text an
edit outside the enclosing scope leaves the key unchanged. The suffix
fingerprint also covers the first line of each scope around the cursor's
line (``SyntaxContext.scope_heads``), so two identical nested scopes in
different functions differ; an edit of one of those header lines is the one
edit outside the scope that changes the key.

``LineAnchor`` identifies "the same place" for typed-through lookups: the
scope-local text before the cursor's line (bounded to ``ANCHOR_CHARS``) and
the suffix. Typing on the current line does not change it, so a cached
suggestion whose start the user has typed can be found from the anchor plus
the current line prefix; and because it covers the scope's text, two places
that merely share a few lines (``@dataclass`` above two classes) differ.

Both are named tuples: immutable, and hashed and compared in C, which
matters because a cache hit hashes its key several times (the policy's
regions and histories are dictionaries). Fingerprints are 64-bit BLAKE2b
digests of bounded text: nothing here ever hashes a whole file.

What the key covers, and what it deliberately does not: the prompt's prefix
window (``prefix_chars``/``prefix_lines``) may reach above the enclosing
scope; the key and the anchor stop at the scope start. That is the design
rule (an edit outside the enclosing scope keeps the key), and it is kept: a
key covering the whole prompt would be the raw-prefix key every edit above
invalidates. The price is bounded: a model that reads text above the scope
may answer a little differently after an edit there, and the cache serves
the answer given for the same scope text and suffix. Covering *more* of the
prompt would not have helped the one divergence measured so far either: on a
synthesized trace over ``heapq.py`` a multi-line answer asked at the top of
``_siftdown_max``'s loop (its continuation lines registered by the store)
was served two lines later as ``if parent < newitem:``, what the file says,
while the reference engine, asked afresh there, answers ``_siftdown``'s
``if newitem < parent:``. The engine decides on its last 200 prompt
characters (``MAX_MATCH``), which at that line no longer reach the
``'Maxheap variant'`` docstring and equal ``_siftdown``'s, and ties go to
the earlier passage; with a 400-character window it answers what the cache
served. The anchor there covers the whole function, more than the engine
saw, so that is an artefact of the engine's window, not of the key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import NamedTuple

#: how much of the text before the cursor's line a ``LineAnchor`` covers
ANCHOR_CHARS = 1000


def fingerprint(text: str) -> int:
    """A stable 64-bit fingerprint of ``text`` (lone surrogates allowed)."""
    data = text.encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


class RecentFingerprint:
    """``fingerprint`` that remembers the last text it was given, and its fingerprint.

    Each keystroke fingerprints a few texts of which most are what the last
    keystroke's were (the text before the line while the user types on it,
    the suffix): telling a text equal to the last one is a comparison (an
    identity check for the same string), cheaper than a new BLAKE2b digest.
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        #: the last text and its fingerprint, replaced as one (never half of each)
        self._last: tuple[str | None, int] = (None, 0)

    def __call__(self, text: str) -> int:
        """The fingerprint of ``text``."""
        last = self._last
        if text == last[0]:
            return last[1]
        fp = fingerprint(text)
        self._last = (text, fp)
        return fp


class ScopeKey(NamedTuple):
    """The exact cache key of a completion context."""

    language: str
    #: ``scopeDepth-nodeType-parentType``
    structure: str
    scope_fp: int
    suffix_fp: int

    @classmethod
    def build(
        cls,
        *,
        language: str,
        scope_depth: int,
        node_type: str,
        parent_type: str,
        scope_text: str,
        suffix_text: str = "",
        suffix_fp: int | None = None,
    ) -> ScopeKey:
        """Build the key from the syntax context's plain values.

        ``suffix_fp`` saves hashing the suffix again when the caller has it.
        """
        structure = f"{scope_depth}-{node_type}-{parent_type}"
        if suffix_fp is None:
            suffix_fp = fingerprint(suffix_text)
        return cls(language, structure, fingerprint(scope_text), suffix_fp)

    def __repr__(self) -> str:
        return (
            f"ScopeKey({self.language!r}, {self.structure!r}, "
            f"{self.scope_fp:016x}, {self.suffix_fp:016x})"
        )

    def digest(self) -> str:
        """A stable hex string for stores outside this process."""
        raw = f"{self.language}\0{self.structure}\0{self.scope_fp:016x}\0{self.suffix_fp:016x}"
        return hashlib.blake2b(raw.encode(), digest_size=16).hexdigest()


class LineAnchor(NamedTuple):
    """Where a line is: the lines before it and the suffix after the cursor."""

    language: str
    context_fp: int
    suffix_fp: int

    @classmethod
    def build(
        cls,
        *,
        language: str,
        context: str,
        suffix_text: str = "",
        suffix_fp: int | None = None,
        hasher: Callable[[str], int] = fingerprint,
    ) -> LineAnchor:
        """Build the anchor from the text before the cursor's line and the suffix.

        ``context`` is the scope-local text up to the start of the line (it
        ends with the previous line's newline); only its last
        ``ANCHOR_CHARS`` characters count. ``hasher`` fingerprints it
        (``fingerprint``, or a ``RecentFingerprint`` kept by the caller).
        """
        if suffix_fp is None:
            suffix_fp = fingerprint(suffix_text)
        if len(context) > ANCHOR_CHARS:
            context = context[-ANCHOR_CHARS:]
        return cls(language, hasher(context), suffix_fp)

    def with_context(self, context: str) -> LineAnchor:
        """The anchor of another line under the same suffix (for multi-line continuations)."""
        return LineAnchor(self.language, fingerprint(context[-ANCHOR_CHARS:]), self.suffix_fp)

    def __repr__(self) -> str:
        return f"LineAnchor({self.language!r}, {self.context_fp:016x}, {self.suffix_fp:016x})"

    def digest(self) -> str:
        """A stable hex string for stores outside this process."""
        raw = f"{self.language}\0{self.context_fp:016x}\0{self.suffix_fp:016x}"
        return hashlib.blake2b(raw.encode(), digest_size=16).hexdigest()

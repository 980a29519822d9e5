"""Cache key designs compared by ``scopecache simulate``.

Each design answers one question per completion request: "can this be served
from what was fetched before, and with which text?" and is told every
upstream answer. They all see the same request stream (``SimRequest``), so
the comparison is on the same work:

* ``position``: key = uri + line + column (a position index), any policy;
* ``prefix``: the whole document prefix, longest cached prefix whose answer
  the user is typing through, LRU 1000 (Continue's published design);
* ``uri-prefix-suffix``: hash(uri, full prefix, full suffix), about 50
  forward entries per answer (its first characters typed through), LRU 100,
  5 minute TTL (Tabby's design);
* ``prefix-trie``: document prefixes with an exact suffix check, typed-through
  reuse, LRU 100 (Copilot's design);
* ``scope``: ours: ``ScopeKey`` + typed-through via ``CompletionStore``;
* ``ideal``: unbounded, serves whenever any earlier answer still fits the
  current line exactly: the bound for a reactive cache that is never stale.

Full prefixes are represented as (fingerprint of the text before the
cursor's line, line prefix), which is exact for typed-through reuse on one
line and keeps memory bounded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from cachetools import LRUCache, TTLCache

from cache.keys import LineAnchor, ScopeKey

STRATEGY_NAMES = ("position", "prefix", "uri-prefix-suffix", "prefix-trie", "scope", "ideal")

#: one line per design, for ``scopecache simulate --help-strategies``
STRATEGY_DESCRIPTIONS = {
    "position": "uri + line + column (a position index), any policy",
    "prefix": "whole document prefix, typed-through reuse, LRU 1000 (Continue)",
    "uri-prefix-suffix": "hash(uri, full prefix, full suffix), ~50 forward entries, "
    "LRU 100, 5 min TTL (Tabby)",
    "prefix-trie": "document prefixes + exact suffix, typed-through reuse, LRU 100 (Copilot)",
    "scope": "ours: ScopeKey + typed-through (the server's CompletionStore), any policy",
    "ideal": "unbounded, serves whenever an earlier answer still fits: the reactive bound",
}
#: strategies whose cache is an eviction policy at the simulated capacities
POLICY_STRATEGIES = ("scope", "position")
TABBY_FORWARD = 50
TABBY_TTL = 300.0


@dataclass(frozen=True, slots=True)
class SimRequest:
    """One completion request as every design sees it."""

    index: int
    t: float
    uri: str
    line: int
    character: int
    key: ScopeKey
    anchor: LineAnchor
    line_prefix: str
    line_suffix: str
    #: scope-local text before the cursor's line (what line anchors cover)
    line_context: str
    #: fingerprint of the document text before the cursor's line
    before_fp: int
    #: fingerprint of the document text after the cursor
    after_fp: int
    #: the suffix fingerprint the scope key uses (scope-bounded, with the scope heads)
    suffix_fp: int
    expect: str | None
    at_line_start: bool
    #: what the engine answers now: raw, and fitted to the line as served
    answer_raw: str
    answer: str
    #: the engine cut ``answer_raw`` at ``maxTokens`` (its end is not the line's)
    answer_truncated: bool = False


class KeyDesign(Protocol):
    """A cache design under simulation."""

    def serve(self, req: SimRequest) -> str | None:
        """The cached text to serve (raw, before fitting), or None for a miss."""

    def store(self, req: SimRequest, raw: str) -> None:
        """Remember the upstream answer ``raw`` fetched for ``req``."""


def _typed_through(
    find: Callable[[str], tuple[str, Any] | None], line_prefix: str
) -> tuple[str, Any] | None:
    """Longest cached line prefix whose answer starts with what was typed since."""
    for k in range(len(line_prefix), -1, -1):
        found = find(line_prefix[:k])
        if found is None:
            continue
        text, extra = found
        typed = line_prefix[k:]
        if len(text) > len(typed) and text.startswith(typed):
            return text[len(typed) :], extra
    return None


class PositionDesign:
    """uri + line + column, whatever the text around it."""

    def __init__(self, policy: Any) -> None:
        self.cache = policy

    def serve(self, req: SimRequest) -> str | None:
        """Serve whatever was cached at this position."""
        try:
            text: str = self.cache[(req.uri, req.line, req.character)]
        except KeyError:
            return None
        return text

    def store(self, req: SimRequest, raw: str) -> None:
        """Cache the answer at its position."""
        self.cache[(req.uri, req.line, req.character)] = raw


class PrefixDesign:
    """Whole-prefix keys with longest-prefix reuse; optional exact suffix check."""

    def __init__(self, capacity: int, *, check_suffix: bool) -> None:
        self.cache: LRUCache[tuple[int, str], tuple[str, int]] = LRUCache(capacity)
        self.check_suffix = check_suffix

    def serve(self, req: SimRequest) -> str | None:
        """The longest cached prefix of the current prefix whose answer is typed through."""

        def find(line_prefix: str) -> tuple[str, Any] | None:
            got = self.cache.get((req.before_fp, line_prefix))
            if got is None or (self.check_suffix and got[1] != req.after_fp):
                return None
            return got

        found = _typed_through(find, req.line_prefix)
        return None if found is None else found[0]

    def store(self, req: SimRequest, raw: str) -> None:
        """Cache the answer under the full prefix (and suffix)."""
        self.cache[(req.before_fp, req.line_prefix)] = (raw, req.after_fp)


class ForwardEntryDesign:
    """hash(uri, prefix, suffix) with forward entries for the answer's first characters."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.cache: TTLCache[tuple[str, int, str, int], str] = TTLCache(100, TABBY_TTL, timer=clock)

    def serve(self, req: SimRequest) -> str | None:
        """Serve an exact (uri, prefix, suffix) entry."""
        return self.cache.get((req.uri, req.before_fp, req.line_prefix, req.after_fp))

    def store(self, req: SimRequest, raw: str) -> None:
        """Write the answer and its forward entries (first line only)."""
        first = raw.split("\n", 1)[0]
        self.cache[(req.uri, req.before_fp, req.line_prefix, req.after_fp)] = raw
        for i in range(1, min(TABBY_FORWARD, len(first))):
            key = (req.uri, req.before_fp, req.line_prefix + raw[:i], req.after_fp)
            self.cache[key] = raw[i:]


class ScopeDesign:
    """Ours: the server's ``CompletionStore`` over a policy."""

    def __init__(self, store: Any) -> None:
        self.store_ = store
        #: the key of the entry the last request used (its own key on a miss)
        self.used: Any = None

    def serve(self, req: SimRequest) -> str | None:
        """Exact key, then typed-through, as the server's store answers."""
        hit = self.store_.lookup(req.key, req.anchor, req.line_prefix)
        self.used = req.key if hit is None else hit.entry.key
        return None if hit is None else str(hit.text)

    def store(self, req: SimRequest, raw: str) -> None:
        """Store the answer once, with the context typed-through lookups need."""
        self.store_.put(
            req.key,
            req.anchor,
            req.line_prefix,
            raw,
            context=req.line_context,
            truncated=req.answer_truncated and raw == req.answer_raw,
        )


class IdealDesign:
    """Unbounded: serve whenever any earlier answer still fits the line exactly.

    Known lines are kept per line prefix: each answer's first line under the
    line prefix it was asked at, and each later line of a multi-line answer
    under the empty prefix (where the user starts that line). A request is a
    hit when some known line, typed through, is the engine's answer now.
    """

    def __init__(self) -> None:
        self.known: dict[str, set[str]] = {}

    def serve(self, req: SimRequest) -> str | None:
        """Hit when some earlier line, typed through, equals the engine's answer now."""
        lp = req.line_prefix
        if not req.answer:
            # Nothing more on this line: known when an earlier line was typed to its end.
            for k in range(len(lp), -1, -1):
                texts = self.known.get(lp[:k])
                if texts and lp[k:] in texts:
                    return ""
            return None
        first = req.answer.split("\n", 1)[0]
        for k in range(len(lp), -1, -1):
            texts = self.known.get(lp[:k])
            if texts and lp[k:] + first in texts:
                self._learn(req)
                return req.answer
        return None

    def store(self, req: SimRequest, raw: str) -> None:
        """Remember the answer (as it is served) under its line prefix."""
        self._learn(req)

    def _learn(self, req: SimRequest) -> None:
        if not req.answer:
            return
        first, *later = req.answer.split("\n")
        self.known.setdefault(req.line_prefix, set()).add(first)
        for line in later:
            if line.strip():
                self.known.setdefault("", set()).add(line)

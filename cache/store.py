"""The L1 completion store: an eviction policy and the typed-through index, kept consistent.

``put`` stores each upstream answer once: in the policy under its exact
``ScopeKey`` and in the typed-through index under its anchor and line prefix.
A multi-line answer (lines l0, l1, ...) also registers continuation entries in
the index only: continuation ``i`` is anchored where line ``i`` starts once
the user has written the lines before it (the context followed by
``line_prefix + l0`` and each later line, same suffix),
with an empty stored line prefix and the rest of the answer from that line.
An auto-indenting editor's ``"    "`` is a prefix of that rest, so the
typed-through rule serves it. A continuation is the model's own prediction
for that line given exactly the lines before it, the state it was in when it
wrote the line, so an autoregressive model asked again answers the same; an
engine that re-matches only a short prompt tail may not (see ``cache.keys``).

Consistency: every index registration belongs to the policy entry of its key.
Policies from ``cache.policies`` report evictions and expiries through
``on_evict`` and the store drops the registrations at once; for any other
``cachetools.Cache`` the store sweeps registrations whose entry is gone when
they outnumber the policy's entries twice, so the index never grows without
bound.

``lookup`` tries the exact key first and verifies it (same anchor, same line
prefix: otherwise a fingerprint collision or a stale entry, rejected and
counted), then the typed-through index.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from cachetools import Cache

from cache.entry import CachedCompletion, Confidence
from cache.keys import LineAnchor, ScopeKey
from cache.typed import TypedThroughIndex

logger = logging.getLogger(__name__)


class Hit(NamedTuple):
    """A cached answer for the cursor: the entry and the text to show from the cursor."""

    entry: CachedCompletion
    text: str
    source: Literal["exact", "typed"]


class CompletionStore:
    """L1 cache of completions: exact keys through the policy, typed-through via the index."""

    def __init__(
        self, policy: Cache[Any, Any], *, timer: Callable[[], float] = time.monotonic
    ) -> None:
        self._policy = policy
        self._timer = timer
        self._index = TypedThroughIndex()
        #: key -> [policy entry, its continuations...] as registered in the index
        self._registered: dict[ScopeKey, list[CachedCompletion]] = {}
        self._hooked = hasattr(policy, "on_evict")
        if self._hooked:
            policy.on_evict = self._on_evict  # type: ignore[attr-defined]
        self.exact_hits = 0
        self.typed_hits = 0
        self.completed_hits = 0
        self.misses = 0
        self.rejections = 0
        self.evictions = 0

    # -- reading ---------------------------------------------------------------------

    def lookup(self, key: ScopeKey, anchor: LineAnchor, line_prefix: str) -> Hit | None:
        """The exact entry (verified), else a typed-through continuation, else None."""
        entry = self._read(key)
        if entry is not None:
            if entry.anchor == anchor and entry.line_prefix == line_prefix and entry.text:
                self.exact_hits += 1
                return Hit(entry, entry.text, "exact")
            self.rejections += 1
            logger.debug("rejected exact entry for %r: context differs", key)
        while (found := self._index.lookup(anchor, line_prefix)) is not None:
            served, rest = found
            if self._still_held(served.key):
                self.typed_hits += 1
                return Hit(served, rest, "typed")
            self._unregister(served.key)  # expired or replaced behind our back
        done = self._index.completed(anchor, line_prefix)
        if done is not None and self._still_held(done.key):
            # Typed to the end of a one-line answer: the model predicted nothing more.
            self.completed_hits += 1
            return Hit(done, "", "typed")
        self.misses += 1
        return None

    # -- writing ---------------------------------------------------------------------

    def put(
        self,
        key: ScopeKey,
        anchor: LineAnchor,
        line_prefix: str,
        text: str,
        *,
        context: str,
        origin: str = "upstream",
        truncated: bool = False,
        confidence: Confidence | None = None,
    ) -> CachedCompletion | None:
        """Store an answer once (plus continuations for its later lines); empty text is not.

        ``truncated``: the answer was cut (at the token limit, or it is what a
        cancelled stream had finished). ``confidence``: how sure the model
        was of its tokens, kept with the answer and each continuation.
        """
        if not text:
            return None
        entry = CachedCompletion(
            key=key,
            anchor=anchor,
            line_prefix=line_prefix,
            text=text,
            created_at=self._timer(),
            origin=origin,
            truncated=truncated,
            confidence=confidence,
        )
        if self._store(entry):
            self._register(entry, self._continuations(entry, context))
        return entry

    def add_entry(self, entry: CachedCompletion) -> None:
        """Store an entry that arrived whole (from L2, prewarm); no continuations."""
        if entry.text and self._store(entry):
            self._register(entry, [])

    def clear(self) -> int:
        """Remove everything; returns how many entries the policy held."""
        removed = len(self._policy)
        self._policy.clear()
        self._index.clear()
        self._registered.clear()
        return removed

    # -- state -----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._policy)

    @property
    def capacity(self) -> int:
        """The policy's maximum size."""
        return int(self._policy.maxsize)

    @property
    def policy_name(self) -> str:
        """The ``cache.policy`` name of the policy."""
        return str(getattr(self._policy, "policy_name", type(self._policy).__name__.lower()))

    @property
    def index_size(self) -> int:
        """Entries in the typed-through index (answers plus continuations)."""
        return len(self._index)

    def policy_stats(self) -> dict[str, Any]:
        """What the policy tells about itself (alpha, p, regions...), plus the store's counters."""
        stats = getattr(self._policy, "stats", None)
        out: dict[str, Any] = dict(stats()) if callable(stats) else {}
        out.setdefault("policy", self.policy_name)
        out.update(
            capacity=self.capacity,
            size=len(self._policy),
            indexed=len(self._index),
            exactHits=self.exact_hits,
            typedHits=self.typed_hits,
            completedHits=self.completed_hits,
            misses=self.misses,
            rejections=self.rejections,
            evictions=self.evictions,
        )
        return out

    # -- internals -------------------------------------------------------------------

    def _read(self, key: ScopeKey) -> CachedCompletion | None:
        # ``get`` counts as a use; an expired entry reads as absent and the policy
        # reports it (and the store unregisters it) when it drops it
        entry: CachedCompletion | None = self._policy.get(key)
        return entry

    def _still_held(self, key: ScopeKey) -> bool:
        """A use of the registered answer (tells the policy) and proof it is still held."""
        group = self._registered.get(key)
        return group is not None and self._read(key) is group[0]

    def _store(self, entry: CachedCompletion) -> bool:
        key = entry.key
        self._unregister(key)
        try:
            self._policy[key] = entry
        except ValueError:
            return False  # too large for the policy
        return key in self._policy  # "none" keeps nothing

    def _continuations(self, entry: CachedCompletion, context: str) -> list[CachedCompletion]:
        lines = entry.text.split("\n")
        if len(lines) < 2:
            return []
        # the text before line i once the user has written the lines before it
        context = context + entry.line_prefix + lines[0] + "\n"
        out = []
        start = len(lines[0]) + 1  # where line i starts in the answer
        for i in range(1, len(lines)):
            rest = "\n".join(lines[i:])
            if rest.strip():
                out.append(
                    CachedCompletion(
                        key=entry.key,
                        anchor=entry.anchor.with_context(context),
                        line_prefix="",
                        text=rest,
                        created_at=entry.created_at,
                        origin="continuation",
                        truncated=entry.truncated,
                        confidence=(
                            entry.confidence.after(start) if entry.confidence is not None else None
                        ),
                    )
                )
            context += lines[i] + "\n"
            start += len(lines[i]) + 1
        return out

    def _register(self, entry: CachedCompletion, continuations: list[CachedCompletion]) -> None:
        group = [entry, *continuations]
        self._registered[entry.key] = group
        for item in group:
            self._index.add(item)
        if not self._hooked and len(self._registered) > 2 * len(self._policy) + 64:
            self._sweep()

    def _unregister(self, key: ScopeKey) -> None:
        group = self._registered.pop(key, None)
        if group is not None:
            for item in group:
                self._index.discard(item)

    def _on_evict(self, key: Any, value: Any) -> None:
        group = self._registered.get(key)
        if group is not None and group[0] is value:
            self._unregister(key)
        self.evictions += 1

    def _sweep(self) -> None:
        """Drop registrations whose entry the policy no longer holds (unhooked policies)."""
        policy = self._policy
        for key in list(self._registered):
            current = Cache.__getitem__(policy, key) if Cache.__contains__(policy, key) else None
            if current is not self._registered[key][0]:
                self._unregister(key)

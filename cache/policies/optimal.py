"""Belady's MIN for offline simulation: evict the key whose next use is furthest away.

No online policy can know the future; this one is told it, and is the upper
bound every other policy is measured against on the same key stream.

How to drive it: construct it with the whole key stream ``future``, then
replay that stream in order, and for each key ``x``:

    try:
        cache[x]          # hit or miss, this advances the cursor by one
    except KeyError:
        cache[x] = value  # a miss: insert (may evict)

``__getitem__`` must be called exactly once per stream position, with the
stream's key at that position (anything else raises ValueError): it is what
moves the cursor. ``get``/``in`` do not move it. Inserts, updates and
deletions do not move it either, and keys that are not in the stream may be
inserted (they are never used again, so they go first).

Eviction is a max-heap on next-use position with lazy invalidation, so each
operation is O(log n).
"""

from __future__ import annotations

import bisect
import heapq
import math
import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from cachetools import Cache

from cache.policies.base import K, PolicyCache, Timer, V

_NEVER = math.inf


class OptimalCache(PolicyCache[K, V]):
    """Belady's offline-optimal replacement, driven by the known future key stream."""

    policy_name = "opt"

    def __init__(
        self,
        maxsize: int,
        future: Sequence[Hashable],
        *,
        timer: Timer = time.monotonic,
        getsizeof: Callable[[V], float] | None = None,
    ) -> None:
        super().__init__(maxsize, timer=timer, getsizeof=getsizeof)
        self._future = list(future)
        self._positions: dict[Hashable, list[int]] = {}
        for index, key in enumerate(self._future):
            self._positions.setdefault(key, []).append(index)
        self.cursor = 0
        #: resident key -> its next use (position in the stream)
        self._next: dict[Hashable, float] = {}
        self._heap: list[tuple[float, int, Hashable]] = []
        self._pushes = 0

    def next_use(self, key: Hashable) -> float:
        """The next stream position at or after the cursor that uses ``key`` (inf: never)."""
        positions = self._positions.get(key)
        if not positions:
            return _NEVER
        i = bisect.bisect_left(positions, self.cursor)
        return positions[i] if i < len(positions) else _NEVER

    def __getitem__(self, key: K) -> V:
        future = self._future
        if self.cursor >= len(future) or future[self.cursor] != key:
            raise ValueError(
                f"OptimalCache driven out of order at position {self.cursor}: got {key!r}"
            )
        self.cursor += 1
        if key not in self._next:
            return self.__missing__(key)
        self._track(key)
        return Cache.__getitem__(self, key)

    def __setitem__(self, key: K, value: V) -> None:
        Cache.__setitem__(self, key, value)
        self._track(key)

    def __delitem__(self, key: K) -> None:
        Cache.__delitem__(self, key)
        del self._next[key]

    def popitem(self) -> tuple[K, V]:
        """Evict the resident key used furthest in the future."""
        heap = self._heap
        nexts = self._next
        while heap:
            neg_next, _, key = heapq.heappop(heap)
            if nexts.get(key) == -neg_next:
                victim: Any = key
                value = Cache.__getitem__(self, victim)
                del self[victim]
                self._evicted(victim, value)
                return victim, value
        raise KeyError("OptimalCache is empty")

    def clear(self) -> None:
        """Remove every entry (the cursor stays where it is)."""
        self._clear_base()
        self._next.clear()
        self._heap.clear()

    def _track(self, key: Hashable) -> None:
        nxt = self.next_use(key)
        nexts = self._next
        nexts[key] = nxt
        self._pushes += 1
        heapq.heappush(self._heap, (-nxt, self._pushes, key))
        if len(self._heap) > 2 * len(nexts) + 64:
            self._heap = [(-n, i, k) for i, (k, n) in enumerate(nexts.items())]
            heapq.heapify(self._heap)

    def stats(self) -> dict[str, Any]:
        """Counters and state."""
        out = super().stats()
        out.update(cursor=self.cursor, streamLength=len(self._future))
        return out

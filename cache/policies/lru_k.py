"""LRU-K (O'Neil, O'Neil & Weikum, SIGMOD 1993): evict by the K-th most recent reference.

Each resident key keeps ``HIST``, the logical times of its last K uncorrelated
references (most recent first), and ``LAST``, its last reference. The victim
is the key with the oldest K-th reference, i.e. the largest backward
K-distance; keys with fewer than K references have an infinite distance and go
first, least recently used among them.

Correlated references: a reference less than ``correlated_period`` seconds
(on the injected timer) after the key's last one belongs to the same burst:
it only moves ``LAST``. The next uncorrelated reference closes the burst and
shifts the older history forward by the burst's length, as in the paper, so
a burst of keystrokes counts as one reference. A key referenced within the
period is not eligible for eviction unless nothing else is.

Retained information: the history of evicted keys is kept in a bounded LRU
table (``retained`` keys, default ``maxsize``), so a key that comes back soon
after an eviction resumes its history instead of starting at infinity.

Eviction is a binary heap with lazy updates. A key's priority (its K-th most
recent reference, or its last reference minus a large offset while it has
fewer than K) only ever grows, so the heap keeps each key once, filed under a
priority that may be stale but is never too high: a reference costs O(1) and
touches no heap; when the minimum surfaces, its priority is recomputed and,
if it grew, the key is re-filed (heapreplace) and the search goes on. Items of
removed keys are dropped when they surface (a token per tracking) and the
heap is rebuilt if they pile up. Eviction is O(log n) amortized, never a scan.

``LRUKOrder`` is the ordering without values (the hybrid policy embeds one as
its hot region); ``LRUKCache`` is the stand-alone policy.
"""

from __future__ import annotations

import heapq
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from cachetools import Cache

from cache.policies.base import K, PolicyCache, Timer, V

#: keys with fewer than K references sort before every key with K of them
_INFINITE = 1 << 62


class _History:
    """Per-key reference history."""

    __slots__ = ("hist", "last_seq", "last_time", "token")

    def __init__(self, hist: list[int]) -> None:
        self.hist = hist
        self.last_seq = hist[0] if hist else 0
        self.last_time = float("-inf")
        self.token = 0

    def priority(self, k: int) -> int:
        """Eviction order: the K-th most recent reference, or far below it with fewer."""
        hist = self.hist
        return hist[k - 1] if len(hist) >= k else self.last_seq - _INFINITE


class LRUKOrder:
    """The LRU-K ranking of a set of keys (no values)."""

    def __init__(self, k: int, correlated_period: float = 0.0, timer: Timer = time.monotonic):
        if k < 1:
            raise ValueError("k must be at least 1")
        if correlated_period < 0:
            raise ValueError("correlated_period must be >= 0")
        self.k = k
        self.correlated_period = float(correlated_period)
        self.timer = timer
        #: the logical time: one tick per reference
        self.clock = 0
        self._pushes = 0
        self.records: dict[Hashable, _History] = {}
        self._heap: list[tuple[int, int, Hashable]] = []

    def __len__(self) -> int:
        return len(self.records)

    def __contains__(self, key: object) -> bool:
        return key in self.records

    def tick(self) -> int:
        """Advance the logical clock by one reference and return it."""
        self.clock += 1
        return self.clock

    def add(self, key: Hashable, hist: list[int] | None = None, *, reference: bool = True) -> None:
        """Track ``key`` (with an earlier history if known), counting a reference."""
        record = _History(hist if hist is not None else [])
        self.records[key] = record
        if reference or not record.hist:
            self.reference(key)
        self._push(key, record)

    def reference(self, key: Hashable) -> None:
        """Record a reference to a tracked key."""
        record = self.records[key]
        self.clock += 1
        now_seq = self.clock
        hist = record.hist
        period = self.correlated_period
        if period > 0.0:
            now = self.timer()
            correlated = bool(hist) and now - record.last_time <= period
            record.last_time = now
            if correlated:
                record.last_seq = now_seq
                return
            if hist:
                # close the burst: shift older history by its length (the paper's correction)
                shift = record.last_seq - hist[0]
                if shift:
                    for i in range(1, len(hist)):
                        hist[i] += shift
        hist.insert(0, now_seq)
        if len(hist) > self.k:
            del hist[self.k :]
        record.last_seq = now_seq

    def remove(self, key: Hashable) -> list[int]:
        """Stop tracking ``key``; returns its history."""
        return self.records.pop(key).hist

    def backward_k_distance(self, key: Hashable) -> int | None:
        """References since ``key``'s K-th most recent one; None means infinite."""
        hist = self.records[key].hist
        if len(hist) < self.k:
            return None
        return self.clock - hist[self.k - 1]

    def victim(self) -> Hashable:
        """The key to evict: largest backward K-distance among eligible keys."""
        heap = self._heap
        records = self.records
        period = self.correlated_period
        now = self.timer() if period > 0.0 else 0.0
        skipped: list[tuple[int, int, Hashable]] = []
        found: tuple[int, int, Hashable] | None = None
        k = self.k
        while heap:
            item = heap[0]
            record = records.get(item[2])
            if record is None or record.token != item[1]:
                heapq.heappop(heap)
                continue
            prio = record.priority(k)
            if prio != item[0]:
                # references since the push only raised the priority: re-file it
                heapq.heapreplace(heap, (prio, item[1], item[2]))
                continue
            if period > 0.0 and now - record.last_time <= period:
                skipped.append(heapq.heappop(heap))
                continue
            found = item
            break
        if found is None:
            if not skipped:
                raise KeyError("no key to evict")
            # every key is inside its correlated period: fall back to the plain order
            found = skipped[0]
        for item in skipped:
            heapq.heappush(heap, item)
        return found[2]

    def clear(self) -> None:
        """Forget every key (the clock keeps running)."""
        self.records.clear()
        self._heap.clear()

    def _push(self, key: Hashable, record: _History) -> None:
        prio = record.priority(self.k)
        if not record.token:
            self._pushes += 1
            record.token = self._pushes
        heap = self._heap
        heapq.heappush(heap, (prio, record.token, key))
        if len(heap) > 2 * len(self.records) + 64:
            self._compact()

    def _compact(self) -> None:
        k = self.k
        fresh = [(record.priority(k), record.token, key) for key, record in self.records.items()]
        heapq.heapify(fresh)
        self._heap = fresh


class LRUKCache(PolicyCache[K, V]):
    """LRU-K replacement with correlated-reference handling and retained history."""

    policy_name = "lruk"

    def __init__(
        self,
        maxsize: int,
        k: int = 2,
        correlated_period: float = 0.0,
        *,
        retained: int | None = None,
        ttl: float = 0.0,
        timer: Timer = time.monotonic,
        getsizeof: Callable[[V], float] | None = None,
    ) -> None:
        super().__init__(maxsize, ttl=ttl, timer=timer, getsizeof=getsizeof)
        self._order = LRUKOrder(k, correlated_period, timer)
        self.retained_limit = int(maxsize) if retained is None else retained
        self._retained: OrderedDict[Hashable, list[int]] = OrderedDict()

    @property
    def k(self) -> int:
        """How many references rank a key."""
        return self._order.k

    def backward_k_distance(self, key: K) -> int | None:
        """References since ``key``'s K-th most recent one; None means infinite."""
        return self._order.backward_k_distance(key)

    def __getitem__(self, key: K) -> V:
        order = self._order
        if key not in order.records:
            return self.__missing__(key)
        if self._deadlines is not None and self._is_expired(key):
            return self._expire(key)
        order.reference(key)
        return Cache.__getitem__(self, key)

    def __setitem__(self, key: K, value: V) -> None:
        if self._deadlines is not None:
            self._drop_expired()
        order = self._order
        known = key in order.records
        Cache.__setitem__(self, key, value)
        if known and key in order.records:
            order.reference(key)
        else:
            order.add(key, self._retained.pop(key, None))
        self._stamp(key)

    def __delitem__(self, key: K) -> None:
        Cache.__delitem__(self, key)
        self._order.remove(key)
        self._unstamp(key)

    def popitem(self) -> tuple[K, V]:
        """Evict the key with the largest backward K-distance."""
        if not self._order.records:
            raise KeyError("LRUKCache is empty")
        key: Any = self._order.victim()
        value = Cache.__getitem__(self, key)
        Cache.__delitem__(self, key)
        self._unstamp(key)
        self._retain(key, self._order.remove(key))
        self._evicted(key, value)
        return key, value

    def clear(self) -> None:
        """Remove every entry and all retained history."""
        self._clear_base()
        self._order.clear()
        self._retained.clear()

    def _retain(self, key: Hashable, hist: list[int]) -> None:
        if self.retained_limit <= 0:
            return
        retained = self._retained
        retained[key] = hist
        retained.move_to_end(key)
        if len(retained) > self.retained_limit:
            retained.popitem(last=False)

    def stats(self) -> dict[str, Any]:
        """Counters and state for ``scopecache/stats``."""
        out = super().stats()
        out.update(k=self.k, retained=len(self._retained))
        return out

"""The stores that need no I/O: ``NullStore`` (``cache.l2 = "none"``) and the ``MemoryStore`` fake.

``MemoryStore`` is the fake that ships beside the seam, for tests of the
callers: several instances built on one ``MemoryHub`` behave like several
processes sharing a store (each sees the others' puts and invalidations as
changes, never its own), and ``hub.down = True`` makes every operation fail
so callers' degradation can be tested without a real outage.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from cache.entry import CachedCompletion
from cache.keys import ScopeKey
from cache.l2.base import Clock, L2Change, L2Store
from cache.l2.errors import L2Unavailable


class NullStore(L2Store):
    """No L2 at all: every lookup misses, every write is dropped."""

    kind = "none"

    async def _get(self, key: ScopeKey) -> CachedCompletion | None:
        return None

    async def _put(self, entry: CachedCompletion) -> None:
        return None

    async def _invalidate(self, key: ScopeKey) -> None:
        return None

    async def _hottest(self, limit: int) -> list[CachedCompletion]:
        return []

    def stats(self) -> dict[str, Any]:
        """As ``L2Store.stats`` with state ``"off"``."""
        return {**super().stats(), "state": "off"}


@dataclass
class _Row:
    entry: CachedCompletion
    hits: int = 0
    last_used: float = 0.0


@dataclass
class MemoryHub:
    """What several ``MemoryStore`` instances share: the rows and the listeners."""

    rows: dict[tuple[str, str], _Row] = field(default_factory=dict)
    stores: list[MemoryStore] = field(default_factory=list)
    #: set to True to make every operation of every store on this hub fail
    down: bool = False


class MemoryStore(L2Store):
    """An in-memory L2 for tests; instances on one hub share entries live."""

    kind = "memory"

    def __init__(
        self,
        namespace: str,
        *,
        hub: MemoryHub | None = None,
        ttl_seconds: float = 0.0,
        clock: Clock = time.time,
        retry_initial: float = 0.0,
    ) -> None:
        super().__init__(namespace, clock=clock, retry_initial=retry_initial)
        self.hub = hub if hub is not None else MemoryHub()
        self.ttl_seconds = ttl_seconds
        self.hub.stores.append(self)

    def _check(self) -> None:
        if self.hub.down:
            raise L2Unavailable("memory hub is down")

    def _fresh(self, row: _Row) -> bool:
        return not self.ttl_seconds or self.clock() - row.entry.created_at < self.ttl_seconds

    async def _get(self, key: ScopeKey) -> CachedCompletion | None:
        self._check()
        row = self.hub.rows.get((self.namespace_id, key.digest()))
        if row is None or not self._fresh(row):
            return None
        row.hits += 1
        row.last_used = self.clock()
        return row.entry

    async def _put(self, entry: CachedCompletion) -> None:
        self._check()
        self.hub.rows[(self.namespace_id, entry.key.digest())] = _Row(entry, 0, self.clock())
        self._broadcast(L2Change("put", entry.key, entry))

    async def _invalidate(self, key: ScopeKey) -> None:
        self._check()
        self.hub.rows.pop((self.namespace_id, key.digest()), None)
        self._broadcast(L2Change("invalidate", key))

    async def _hottest(self, limit: int) -> list[CachedCompletion]:
        self._check()
        rows = [
            row
            for (ns, _), row in self.hub.rows.items()
            if ns == self.namespace_id and self._fresh(row)
        ]
        rows.sort(key=lambda r: (r.hits, r.last_used), reverse=True)
        return [row.entry for row in rows[:limit]]

    async def _close(self) -> None:
        if self in self.hub.stores:
            self.hub.stores.remove(self)

    def _size(self) -> int:
        return sum(1 for ns, _ in self.hub.rows if ns == self.namespace_id)

    def _broadcast(self, change: L2Change) -> None:
        for store in self.hub.stores:
            if store is not self and store.namespace_id == self.namespace_id:
                store._publish(change)

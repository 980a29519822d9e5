"""What every eviction policy here shares: a clock, an optional TTL, eviction listeners.

A policy is a ``cachetools.Cache``; subclasses override only the mapping
methods (``__getitem__``, ``__setitem__``, ``__delitem__``, ``popitem``,
``clear``) and call the helpers below. Expiry is lazy and cheap: with a fixed
TTL, deadlines are ordered like insertions, so an ``OrderedDict`` holds them
and expired entries are dropped from its front on every insert (and on a read
of the expired key itself). Evictions (``popitem``) and expiries are reported
to ``on_evict`` so that owners such as the completion store can keep side
indexes consistent.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from cachetools import Cache

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: called with (key, value) when a policy evicts or expires an entry
EvictionListener = Callable[[Any, Any], None]
Timer = Callable[[], float]


class PolicyCache(Cache[K, V]):
    """Base of the scopecache policies: timer, optional TTL and eviction reporting."""

    #: the name ``make_policy`` knows the policy by
    policy_name = "policy"

    def __init__(
        self,
        maxsize: int,
        *,
        ttl: float = 0.0,
        timer: Timer = time.monotonic,
        getsizeof: Callable[[V], float] | None = None,
    ) -> None:
        if ttl < 0:
            raise ValueError("ttl must be >= 0 (0 means no expiry)")
        super().__init__(maxsize, getsizeof)
        self.timer = timer
        self.ttl = float(ttl)
        #: key -> deadline, oldest first; None when entries never expire
        self._deadlines: OrderedDict[K, float] | None = OrderedDict() if ttl > 0 else None
        self.on_evict: EvictionListener | None = None
        self.evictions = 0
        self.expirations = 0

    def __contains__(self, key: object) -> bool:
        if not Cache.__contains__(self, key):
            return False
        deadlines = self._deadlines
        if deadlines is None:
            return True
        deadline = deadlines.get(key, 0.0)  # type: ignore[arg-type]
        return bool(deadline > self.timer())

    # -- helpers for subclasses -------------------------------------------------

    def _stamp(self, key: K) -> None:
        """Start (or restart) ``key``'s time to live."""
        deadlines = self._deadlines
        if deadlines is not None:
            deadlines[key] = self.timer() + self.ttl
            deadlines.move_to_end(key)

    def _unstamp(self, key: K) -> None:
        if self._deadlines is not None:
            self._deadlines.pop(key, None)

    def _is_expired(self, key: K) -> bool:
        deadlines = self._deadlines
        if deadlines is None:
            return False
        deadline = deadlines.get(key)
        return deadline is not None and deadline <= self.timer()

    def _expire(self, key: K) -> V:
        """Remove an expired entry, report it, and answer as a miss would."""
        value = Cache.__getitem__(self, key)
        del self[key]
        self.expirations += 1
        if self.on_evict is not None:
            self.on_evict(key, value)
        return self.__missing__(key)

    def _drop_expired(self) -> None:
        """Remove every expired entry (called before inserts)."""
        deadlines = self._deadlines
        if not deadlines:
            return
        now = self.timer()
        while deadlines:
            key, deadline = next(iter(deadlines.items()))
            if deadline > now:
                break
            value = Cache.__getitem__(self, key)
            del self[key]
            deadlines.pop(key, None)
            self.expirations += 1
            if self.on_evict is not None:
                self.on_evict(key, value)

    def _evicted(self, key: K, value: V) -> None:
        """Count and report an eviction made by ``popitem``."""
        self.evictions += 1
        if self.on_evict is not None:
            self.on_evict(key, value)

    def _clear_base(self) -> None:
        Cache.clear(self)
        if self._deadlines is not None:
            self._deadlines.clear()

    def stats(self) -> dict[str, Any]:
        """Counters and state for ``scopecache/stats``."""
        return {
            "policy": self.policy_name,
            "size": len(self),
            "evictions": self.evictions,
            "expirations": self.expirations,
        }

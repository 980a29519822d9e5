"""The textbook policies (LRU, LFU) and ``NoCache``, the policy that stores nothing.

LRU and LFU are cachetools' own, with our optional TTL and eviction reporting
added; ``NoCache`` is ``cache.policy = "none"``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from cachetools import LFUCache, LRUCache

from cache.policies.base import K, PolicyCache, Timer, V


class _WrappedPolicy(PolicyCache[K, V]):
    """A cachetools policy (next in the MRO) with an optional TTL and eviction reporting."""

    #: the cachetools class whose eviction order is used
    _ordering: Any

    def __getitem__(self, key: K) -> V:
        if self._deadlines is not None and self._is_expired(key):
            return self._expire(key)
        return super().__getitem__(key)

    def __setitem__(self, key: K, value: V) -> None:
        self._drop_expired()
        super().__setitem__(key, value)
        self._stamp(key)

    def __delitem__(self, key: K) -> None:
        super().__delitem__(key)
        self._unstamp(key)

    def popitem(self) -> tuple[K, V]:
        """Evict the entry the underlying policy chooses."""
        key, value = super().popitem()
        self._evicted(key, value)
        return key, value

    def clear(self) -> None:
        """Remove every entry (not an eviction: nothing is reported)."""
        self._ordering.clear(self)
        self._clear_base()


class LRUPolicy(_WrappedPolicy[K, V], LRUCache[K, V]):
    """``cachetools.LRUCache``: evicts the least recently used entry."""

    policy_name = "lru"
    _ordering = LRUCache


class LFUPolicy(_WrappedPolicy[K, V], LFUCache[K, V]):
    """``cachetools.LFUCache``: evicts the least frequently used entry (LRU among equals)."""

    policy_name = "lfu"
    _ordering = LFUCache


class NoCache(PolicyCache[K, V]):
    """A cache that stores nothing: every insert is dropped, every lookup misses."""

    policy_name = "none"

    def __init__(
        self,
        maxsize: int = 0,
        *,
        ttl: float = 0.0,
        timer: Timer = time.monotonic,
        getsizeof: Callable[[V], float] | None = None,
    ) -> None:
        # capacity 0 whatever was asked: "none" means nothing is kept
        super().__init__(0, ttl=ttl, timer=timer, getsizeof=getsizeof)

    def __getitem__(self, key: K) -> V:
        return self.__missing__(key)

    def __setitem__(self, key: K, value: V) -> None:
        # dropping the value is the policy; callers never need to special-case it
        return None

    def __delitem__(self, key: K) -> None:
        raise KeyError(key)

    def popitem(self) -> tuple[K, V]:
        """Always empty."""
        raise KeyError("NoCache is empty")

    def clear(self) -> None:
        """Nothing to remove."""
        return None

    def stats(self) -> dict[str, Any]:
        """Counters for ``scopecache/stats``."""
        return {"policy": self.policy_name, "size": 0}


__all__ = ["LFUPolicy", "LRUPolicy", "NoCache"]

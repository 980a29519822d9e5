"""The hybrid policy: an LRU-K region for hot keys, an ARC region for the long tail.

Every new key enters the ARC region (T1, or T2 after a ghost hit) and the
hybrid keeps the logical times of its last K references. A key that reaches
K references within ``promotion_period`` references (default: the capacity)
is promoted to the LRU-K region, which ranks its keys by the K-th most recent
reference. The LRU-K region has a hard limit, enforced on every insert and
every promotion: its weakest key (largest backward K-distance) is demoted to
the MRU end of ARC's T2, keeping its history. Evictions (``popitem``) take
ARC's REPLACE victim; the hot region loses a key only when ARC is empty.

The context weight ``alpha`` in [0.3, 0.7] sets the balance between the two
regions: the LRU-K limit and T1's target (``cache.policies.hybrid.balance``).

Correlated references: a reference within ``correlated_window`` logical
references of the key's previous one is one burst with it; it refreshes
recency only (``cache.policies.hybrid.bursts``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Any

from cachetools import Cache

from cache.heat import ContextHeat
from cache.policies.arc import ARCCore
from cache.policies.base import K, PolicyCache, Timer, V
from cache.policies.hybrid.balance import AlphaBalance, check_alpha
from cache.policies.hybrid.bursts import CorrelationWindow
from cache.policies.lru_k import LRUKOrder

DEFAULT_HYBRID_K = 3


class HybridCache(PolicyCache[K, V]):
    """LRU-K region for hot keys plus an ARC region, balanced by the context weight alpha."""

    policy_name = "hybrid"

    def __init__(
        self,
        maxsize: int,
        k: int = DEFAULT_HYBRID_K,
        alpha: float | str = "auto",
        heat: ContextHeat | None = None,
        *,
        promotion_period: int | None = None,
        correlated_window: int = 0,
        adapt_correlation: bool = True,
        ttl: float = 0.0,
        timer: Timer = time.monotonic,
        getsizeof: Callable[[V], float] | None = None,
    ) -> None:
        fixed = check_alpha(alpha)
        super().__init__(maxsize, ttl=ttl, timer=timer, getsizeof=getsizeof)
        capacity = int(maxsize)
        self.capacity = capacity
        heat = heat if heat is not None else ContextHeat(timer=timer)
        self._balance = AlphaBalance(capacity, fixed, heat)
        self._bursts = CorrelationWindow(capacity, correlated_window, adapt_correlation)
        self.promotion_period = capacity if promotion_period is None else promotion_period
        self._hot = LRUKOrder(k, 0.0, timer)
        self._arc = ARCCore(capacity, self._balance.t1_target)
        #: reference history (logical times, newest first) of the ARC region's keys
        self._refs: dict[Hashable, list[int]] = {}
        self.evictions_hot = 0
        self.evictions_arc = 0
        self.promotions = 0
        self.demotions = 0

    # -- state for stats and tests -------------------------------------------------

    @property
    def k(self) -> int:
        """References within the period that promote a key to the LRU-K region."""
        return self._hot.k

    @property
    def p(self) -> float:
        """ARC's adaptive T1 target in the ARC region."""
        return self._arc.p

    @property
    def alpha(self) -> float:
        """The context weight in force."""
        return self._balance.alpha

    @property
    def heat(self) -> ContextHeat:
        """The editing context that ``alpha="auto"`` follows."""
        return self._balance.heat

    @property
    def hot_limit(self) -> int:
        """The LRU-K region's hard limit at the current alpha."""
        return self._balance.hot_limit

    @property
    def correlated_window(self) -> int:
        """References this close (in logical time) to the previous one are one burst."""
        return self._bursts.window

    @property
    def adapt_correlation(self) -> bool:
        """Whether the correlated window adapts to evictions and ghost hits."""
        return self._bursts.adapt

    @property
    def t1_target(self) -> float:
        """T1's target derived from alpha alone."""
        return self._balance.t1_target

    @property
    def regions(self) -> dict[str, int]:
        """How many keys each list holds (hot = the LRU-K region; b1/b2 are ghosts)."""
        arc = self._arc
        return {
            "hot": len(self._hot),
            "t1": len(arc.t1),
            "t2": len(arc.t2),
            "b1": len(arc.b1),
            "b2": len(arc.b2),
        }

    def in_hot_region(self, key: K) -> bool:
        """True when ``key`` is in the LRU-K region."""
        return key in self._hot.records

    def set_alpha(self, alpha: float) -> None:
        """Move the balance: the LRU-K limit and T1's target (p shifts with it)."""
        shift = self._balance.move(alpha)
        if shift is not None:
            arc = self._arc
            arc.p = min(float(arc.c), max(0.0, arc.p + shift))

    # -- mapping ---------------------------------------------------------------------

    def __getitem__(self, key: K) -> V:
        # one history lookup decides the region
        hist = self._refs.get(key)
        if hist is None and key not in self._hot.records:
            return self.__missing__(key)
        if self._deadlines is not None and self._is_expired(key):
            return self._expire(key)
        return self._use(key, hist)

    def get(self, key: K, default: Any = None) -> Any:
        """``self[key]`` (a use) when ``key`` is held and live, else ``default``.

        What ``cachetools``'s ``get`` does, in one pass: the store reads every
        keystroke's key this way, and that ``get`` tests membership through
        two methods and then looks the key up again through ``__getitem__``.
        An expired entry reads as absent and stays until an insert drops it,
        as there.
        """
        hist = self._refs.get(key)
        if hist is None and key not in self._hot.records:
            return default
        if self._deadlines is not None and self._is_expired(key):
            return default
        return self._use(key, hist)

    def _use(self, key: K, hist: list[int] | None) -> V:
        """A reference to a held key (``hist``: its ARC history, None in the LRU-K region)."""
        if hist is None:
            self._hot.reference(key)
        else:
            self._reference_arc(key, hist)
        return Cache.__getitem__(self, key)

    def __setitem__(self, key: K, value: V) -> None:
        if self._deadlines is not None:
            self._drop_expired()
        resident = Cache.__contains__(self, key)
        if resident:
            Cache.__setitem__(self, key, value)
            if key in self._refs or key in self._hot.records:
                self._reference(key)
                self._stamp(key)
                return
            # a larger value evicted the key itself on its way back in: track it anew
        alpha = self._balance.heat_moved()
        if alpha is not None:
            self.set_alpha(alpha)
        arc = self._arc
        if key in arc.b1:
            self._bursts.ghost_hit_b1(key)
        arc.insert(key, None if resident else self, value)
        hot = self._hot
        self._refs[key] = [hot.tick()]
        if self._deadlines is not None:
            self._stamp(key)
        if len(hot.records) > self._balance.hot_limit:
            self._enforce_hot_limit()

    def __delitem__(self, key: K) -> None:
        Cache.__delitem__(self, key)
        self._bursts.forget(key)
        if self._refs.pop(key, None) is not None:
            self._arc.remove(key)
        else:
            self._hot.remove(key)
        self._unstamp(key)

    def popitem(self) -> tuple[K, V]:
        """Evict ARC's REPLACE victim; the LRU-K region's weakest key only if ARC is empty."""
        key: Any
        arc = self._arc
        if arc.t1 or arc.t2:
            key = arc.replace()
            hist = self._refs.pop(key)
            self.evictions_arc += 1
            self._bursts.evicted(key, key in arc.b2, len(hist))
        elif self._hot.records:
            key = self._hot.victim()
            self._hot.remove(key)
            arc.b2[key] = None  # it was frequent: a comeback should land in T2
            self.evictions_hot += 1
        else:
            raise KeyError("HybridCache is empty")
        value = Cache.__getitem__(self, key)
        Cache.__delitem__(self, key)
        if self._deadlines is not None:
            self._unstamp(key)
        self._evicted(key, value)
        return key, value

    def clear(self) -> None:
        """Remove every entry, ghost and history."""
        self._clear_base()
        self._arc.clear()
        self._hot.clear()
        self._refs.clear()
        self._bursts.clear()

    # -- regions ---------------------------------------------------------------------

    def _reference(self, key: Hashable) -> None:
        hist = self._refs.get(key)
        if hist is None:
            self._hot.reference(key)
        else:
            self._reference_arc(key, hist)

    def _reference_arc(self, key: Hashable, hist: list[int]) -> None:
        hot = self._hot
        hot.clock += 1  # hot.tick(), inline on the hit path
        now = hot.clock
        arc = self._arc
        t1 = arc.t1
        bursts = self._bursts
        if now - hist[0] <= bursts.window and bursts.same_burst(key, now, hist[0]):
            # same burst (re-requests while typing): recency only, not frequency
            hist[0] = now
            if key in t1:
                t1.move_to_end(key)
            else:
                arc.t2.move_to_end(key)
            return
        if key in t1:
            del t1[key]
            arc.t2[key] = None
        else:
            arc.t2.move_to_end(key)
        hist.insert(0, now)
        k = hot.k
        if len(hist) >= k:
            del hist[k:]
            if now - hist[k - 1] <= self.promotion_period and self._balance.hot_limit > 0:
                self._promote(key, hist)

    def _promote(self, key: Hashable, hist: list[int]) -> None:
        self._arc.remove(key)
        del self._refs[key]
        self._bursts.forget(key)
        self._hot.add(key, hist, reference=False)
        self.promotions += 1
        self._enforce_hot_limit()

    def _enforce_hot_limit(self) -> None:
        hot, limit = self._hot, self._balance.hot_limit
        while len(hot.records) > limit:
            key = hot.victim()
            self._refs[key] = hot.remove(key)
            self._arc.t2[key] = None
            self.demotions += 1

    def stats(self) -> dict[str, Any]:
        """Counters and state for ``scopecache/stats``."""
        out = super().stats()
        out.update(
            alpha=round(self.alpha, 3),
            alphaMode=self._balance.mode,
            p=round(self._arc.p, 3),
            t1Target=round(self.t1_target, 3),
            hotLimit=self.hot_limit,
            regions=self.regions,
            ghostHitsB1=self._arc.ghost_hits_b1,
            ghostHitsB2=self._arc.ghost_hits_b2,
            evictionsByRegion={"hot": self.evictions_hot, "arc": self.evictions_arc},
            promotions=self.promotions,
            correlatedWindow=self.correlated_window,
            demotions=self.demotions,
        )
        return out

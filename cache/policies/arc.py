"""ARC, the Adaptive Replacement Cache (Megiddo & Modha, FAST 2003).

Resident entries live in T1 (seen once recently) and T2 (seen at least
twice); B1 and B2 are ghost lists holding only the keys recently evicted from
T1 and T2. The target size ``p`` of T1 adapts: a hit in B1 says T1 was too
small (p grows by max(|B2|/|B1|, 1)), a hit in B2 says T2 was (p shrinks by
max(|B1|/|B2|, 1)). The four cases of the paper map onto the mapping API:

* Case I (hit in T1 or T2): a read or an update moves the key to T2's MRU end.
* Case II/III (insert of a key in B1/B2): adapt ``p``, REPLACE, key to T2.
* Case IV (insert of an unknown key): trim L1 = T1+B1 to c or L1+L2 to 2c,
  REPLACE when full, key to T1.

REPLACE is ``popitem``, so every eviction goes through it: it evicts T1's LRU
(into B1) when ``|T1| > p`` or when the incoming key is a B2 ghost and
``|T1| == p``, otherwise T2's LRU (into B2). Deletions the paper does not have
(``del cache[key]``) just drop the key; replacement then runs only when the
cache is really full, which keeps the invariants under arbitrary use.

``ARCCore`` is the algorithm on a capacity it is told; ``ARCCache`` is the
stand-alone policy. The hybrid policy embeds an ``ARCCore`` as its long-tail
region.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from cachetools import Cache

from cache.policies.base import K, PolicyCache, Timer, V


class ARCCore:
    """The ARC directory (T1, T2, B1, B2, p) without the values."""

    __slots__ = ("c", "p", "t1", "t2", "b1", "b2", "ghost_hits_b1", "ghost_hits_b2", "_incoming")

    def __init__(self, capacity: int, p: float = 0.0) -> None:
        self.c = capacity
        self.p = float(p)
        self.t1: OrderedDict[Hashable, None] = OrderedDict()
        self.t2: OrderedDict[Hashable, None] = OrderedDict()
        self.b1: OrderedDict[Hashable, None] = OrderedDict()
        self.b2: OrderedDict[Hashable, None] = OrderedDict()
        self.ghost_hits_b1 = 0
        self.ghost_hits_b2 = 0
        #: where the key being inserted came from ("b1", "b2", "new"), for REPLACE
        self._incoming = ""

    def __len__(self) -> int:
        return len(self.t1) + len(self.t2)

    def hit(self, key: Hashable) -> None:
        """Case I: a resident key was referenced."""
        t1 = self.t1
        if key in t1:
            del t1[key]
            self.t2[key] = None
        else:
            self.t2.move_to_end(key)

    def insert(
        self, key: Hashable, owner: Cache[Any, Any] | None = None, value: Any = None
    ) -> None:
        """Cases II-IV for a new resident key, storing ``value`` in ``owner`` if given.

        Before the value goes in: adapt p on a ghost hit, trim the ghosts.
        Storing may call REPLACE (the owner's ``popitem``), which needs to know
        where the incoming key came from; that is only set while it runs. One
        method, no callback: this is the miss path of every keystroke.
        """
        t1, t2, b1, b2 = self.t1, self.t2, self.b1, self.b2
        c = self.c
        if key in b1:
            self.ghost_hits_b1 += 1
            self.p = min(float(c), self.p + max(len(b2) / len(b1), 1.0))
            del b1[key]
            source = "b1"
        elif key in b2:
            self.ghost_hits_b2 += 1
            self.p = max(0.0, self.p - max(len(b1) / len(b2), 1.0))
            del b2[key]
            source = "b2"
        else:
            source = "new"
            if len(t1) + len(b1) >= c:
                if b1:
                    b1.popitem(last=False)
                else:
                    source = "new-no-ghost"  # Case IV.A with B1 empty: T1's LRU leaves for good
            elif len(t1) + len(t2) + len(b1) + len(b2) >= 2 * c and b2:
                b2.popitem(last=False)
        if owner is not None:
            self._incoming = source
            try:
                Cache.__setitem__(owner, key, value)
            finally:
                self._incoming = ""
        if source == "b1" or source == "b2":
            t2[key] = None
        else:
            t1[key] = None
        # deletions outside the paper can leave ghosts beyond the bounds: trim them
        while b1 and len(t1) + len(b1) > c:
            b1.popitem(last=False)
        while b2 and len(t1) + len(t2) + len(b1) + len(b2) > 2 * c:
            b2.popitem(last=False)

    def replace(self) -> Hashable:
        """REPLACE: choose and unlink the victim, remembering it as a ghost."""
        t1, t2 = self.t1, self.t2
        incoming = self._incoming
        n1 = len(t1)
        if n1 and (n1 > self.p or (incoming == "b2" and n1 == self.p) or not t2):
            key, _ = t1.popitem(last=False)
            if incoming != "new-no-ghost":
                self.b1[key] = None
            return key
        if not t2:
            raise KeyError("ARC region is empty")
        key, _ = t2.popitem(last=False)
        self.b2[key] = None
        return key

    def remove(self, key: Hashable) -> None:
        """Drop a resident key without a ghost (explicit deletion)."""
        if key in self.t1:
            del self.t1[key]
        else:
            self.t2.pop(key, None)

    def clear(self) -> None:
        """Forget everything, keep p's setting."""
        self.t1.clear()
        self.t2.clear()
        self.b1.clear()
        self.b2.clear()

    def stats(self) -> dict[str, Any]:
        """Sizes and p for ``scopecache/stats``."""
        return {
            "p": round(self.p, 3),
            "t1": len(self.t1),
            "t2": len(self.t2),
            "b1": len(self.b1),
            "b2": len(self.b2),
            "ghostHitsB1": self.ghost_hits_b1,
            "ghostHitsB2": self.ghost_hits_b2,
        }


class ARCCache(PolicyCache[K, V]):
    """Adaptive Replacement Cache with ghost lists B1/B2 and the adaptive target ``p``."""

    policy_name = "arc"

    def __init__(
        self,
        maxsize: int,
        *,
        ttl: float = 0.0,
        timer: Timer = time.monotonic,
        getsizeof: Callable[[V], float] | None = None,
    ) -> None:
        super().__init__(maxsize, ttl=ttl, timer=timer, getsizeof=getsizeof)
        self._arc = ARCCore(int(maxsize))

    @property
    def p(self) -> float:
        """The adaptive target size of T1."""
        return self._arc.p

    @property
    def sizes(self) -> dict[str, int]:
        """Lengths of T1, T2, B1 and B2."""
        arc = self._arc
        return {"t1": len(arc.t1), "t2": len(arc.t2), "b1": len(arc.b1), "b2": len(arc.b2)}

    def __getitem__(self, key: K) -> V:
        if not Cache.__contains__(self, key):
            return self.__missing__(key)
        if self._deadlines is not None and self._is_expired(key):
            return self._expire(key)
        self._arc.hit(key)
        return Cache.__getitem__(self, key)

    def __setitem__(self, key: K, value: V) -> None:
        if self._deadlines is not None:
            self._drop_expired()
        arc = self._arc
        if Cache.__contains__(self, key):
            Cache.__setitem__(self, key, value)
            if key in arc.t1 or key in arc.t2:
                arc.hit(key)
                self._stamp(key)
                return
            # a larger value evicted the key itself on its way back in: track it anew
            arc.insert(key)
        else:
            arc.insert(key, self, value)
        self._stamp(key)

    def __delitem__(self, key: K) -> None:
        Cache.__delitem__(self, key)
        self._arc.remove(key)
        self._unstamp(key)

    def popitem(self) -> tuple[K, V]:
        """REPLACE: evict T1's or T2's LRU entry according to ``p``."""
        if not len(self._arc):
            raise KeyError("ARCCache is empty")
        key: Any = self._arc.replace()
        value = Cache.__getitem__(self, key)
        Cache.__delitem__(self, key)
        self._unstamp(key)
        self._evicted(key, value)
        return key, value

    def clear(self) -> None:
        """Remove every entry and ghost."""
        self._clear_base()
        self._arc.clear()

    def stats(self) -> dict[str, Any]:
        """Counters and state for ``scopecache/stats``."""
        out = super().stats()
        out.update(self._arc.stats())
        return out

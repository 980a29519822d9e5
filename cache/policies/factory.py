"""``make_policy``: the L1 policy named by the ``cache.policy`` setting.

Default K for ``lruk`` is 2: on the synthetic editing stream of
``tests/bench/bench_cache.py`` (Zipf-like reuse, bursts of re-requests while
typing, one-off scans), K=2 had the best hit ratio of K in 2..4 at every
capacity measured (64 to 4096), and beat K=1 (plain LRU) everywhere but at
64 entries (0.655 vs 0.674); K>=3 evicts new contexts before they can prove
themselves (0.639 and 0.618 at 64 entries). The hybrid's LRU-K region uses
K=3 (the seed design) because it only promotes keys that are already hot.
"""

from __future__ import annotations

import time
from typing import Any

from cache.heat import ContextHeat
from cache.policies.arc import ARCCache
from cache.policies.base import PolicyCache, Timer
from cache.policies.classic import LFUPolicy, LRUPolicy, NoCache
from cache.policies.hybrid.balance import check_alpha
from cache.policies.hybrid.policy import DEFAULT_HYBRID_K, HybridCache
from cache.policies.lru_k import LRUKCache

#: the names ``cache.policy`` accepts
POLICY_NAMES = ("none", "lru", "lfu", "arc", "lruk", "hybrid")
DEFAULT_LRUK_K = 2


def make_policy(
    name: str,
    capacity: int,
    *,
    k: int = DEFAULT_LRUK_K,
    alpha: float | str = "auto",
    ttl: float = 0.0,
    timer: Timer = time.monotonic,
    heat: ContextHeat | None = None,
) -> PolicyCache[Any, Any]:
    """Build the policy ``name`` with ``capacity`` entries.

    ``k`` is LRU-K's K for ``lruk``; for ``hybrid`` it is the K of the LRU-K
    region and defaults to 3 there when left at the ``lruk`` default.
    Raises ValueError naming the bad argument.
    """
    if name not in POLICY_NAMES:
        expected = ", ".join(POLICY_NAMES)
        raise ValueError(f"unknown cache policy {name!r}; expected one of {expected}")
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
        raise ValueError(f"cache capacity must be a positive integer, not {capacity!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, not {k!r}")
    check_alpha(alpha)
    if ttl < 0:
        raise ValueError(f"ttl must be >= 0 seconds (0: no expiry), not {ttl!r}")
    if name == "none":
        return NoCache(capacity, ttl=ttl, timer=timer)
    if name == "lru":
        return LRUPolicy(capacity, ttl=ttl, timer=timer)
    if name == "lfu":
        return LFUPolicy(capacity, ttl=ttl, timer=timer)
    if name == "arc":
        return ARCCache(capacity, ttl=ttl, timer=timer)
    if name == "lruk":
        return LRUKCache(capacity, k, ttl=ttl, timer=timer)
    hybrid_k = DEFAULT_HYBRID_K if k == DEFAULT_LRUK_K else k
    return HybridCache(capacity, hybrid_k, alpha, heat, ttl=ttl, timer=timer)

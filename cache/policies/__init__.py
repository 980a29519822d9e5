"""Eviction policies for the L1 completion cache, all ``cachetools.Cache`` subclasses.

``make_policy(name, capacity, ...)`` builds the one ``cache.policy`` names:
``none``, ``lru``, ``lfu``, ``arc``, ``lruk`` or ``hybrid``. ``OptimalCache``
(Belady) is for offline simulation only. Every policy reports evictions and
expiries to its ``on_evict`` listener and describes itself with ``stats()``.
"""

from __future__ import annotations

from cache.policies.arc import ARCCache, ARCCore
from cache.policies.base import EvictionListener, PolicyCache
from cache.policies.classic import LFUPolicy, LRUPolicy, NoCache
from cache.policies.factory import DEFAULT_LRUK_K, POLICY_NAMES, make_policy
from cache.policies.hybrid.balance import hot_limit_for, t1_target_for
from cache.policies.hybrid.policy import HybridCache
from cache.policies.lru_k import LRUKCache, LRUKOrder
from cache.policies.optimal import OptimalCache

__all__ = [
    "ARCCache",
    "ARCCore",
    "DEFAULT_LRUK_K",
    "EvictionListener",
    "HybridCache",
    "LFUPolicy",
    "LRUKCache",
    "LRUKOrder",
    "LRUPolicy",
    "NoCache",
    "OptimalCache",
    "POLICY_NAMES",
    "PolicyCache",
    "hot_limit_for",
    "make_policy",
    "t1_target_for",
]

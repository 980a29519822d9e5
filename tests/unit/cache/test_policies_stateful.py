"""Every policy behaves as a bounded subset of a plain dict (hypothesis state machines)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cachetools import Cache
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from cache.policies import ARCCache, HybridCache, LFUPolicy, LRUKCache, LRUPolicy

CAPACITY = 4
keys = st.integers(min_value=0, max_value=9)
values = st.integers()


def policy_machine(factory: Callable[[], Cache[Any, Any]]) -> type[RuleBasedStateMachine]:
    class PolicyMachine(RuleBasedStateMachine):
        """The cache never holds a key the model does not, nor a stale value."""

        def __init__(self) -> None:
            super().__init__()
            self.cache = factory()
            self.model: dict[int, int] = {}
            self.evicted: list[int] = []
            self.cache.on_evict = lambda key, value: self.evicted.append(key)  # type: ignore[attr-defined]

        @rule(key=keys, value=values)
        def put(self, key: int, value: int) -> None:
            self.cache[key] = value
            self.model[key] = value
            assert self.cache[key] == value

        @rule(key=keys)
        def get(self, key: int) -> None:
            got = self.cache.get(key)
            if got is not None:
                assert self.model[key] == got

        @rule(key=keys)
        def delete(self, key: int) -> None:
            present = key in self.cache
            self.cache.pop(key, None)
            self.model.pop(key, None)
            assert key not in self.cache or not present

        @rule()
        def popitem(self) -> None:
            if len(self.cache):
                key, value = self.cache.popitem()
                assert self.model.pop(key) == value

        @rule()
        def clear(self) -> None:
            self.cache.clear()
            self.model.clear()

        @invariant()
        def bounded_subset_of_model(self) -> None:
            assert len(self.cache) <= CAPACITY
            assert self.cache.currsize == len(self.cache)
            for key in list(self.cache):
                assert self.cache.get(key) == self.model[key]
            for key in self.evicted:
                assert key not in self.cache or key in self.model
            self.evicted.clear()
            stats = self.cache.stats()  # type: ignore[attr-defined]
            if "regions" in stats:  # hybrid: every resident key is in exactly one region
                regions = stats["regions"]
                assert regions["hot"] + regions["t1"] + regions["t2"] == len(self.cache)
                assert regions["hot"] <= stats["hotLimit"]
            elif "t1" in stats:
                assert stats["t1"] + stats["t2"] == len(self.cache)
            # evicted keys leave the model too: drop what the cache no longer has
            for key in [k for k in self.model if k not in self.cache]:
                del self.model[key]

    return PolicyMachine


bounded = settings(max_examples=25, stateful_step_count=30, deadline=None)

TestLRUMachine = bounded(policy_machine(lambda: LRUPolicy(CAPACITY))).TestCase
TestLFUMachine = bounded(policy_machine(lambda: LFUPolicy(CAPACITY))).TestCase
TestARCMachine = bounded(policy_machine(lambda: ARCCache(CAPACITY))).TestCase
TestLRUKMachine = bounded(policy_machine(lambda: LRUKCache(CAPACITY, 2))).TestCase
TestHybridMachine = bounded(
    policy_machine(lambda: HybridCache(CAPACITY, 2, 0.5, promotion_period=8))
).TestCase

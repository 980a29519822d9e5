"""The mapping contract every eviction policy keeps (one mixin, run per policy)."""

from __future__ import annotations

from typing import Any

import pytest
from cachetools import Cache

from cache.policies import (
    ARCCache,
    HybridCache,
    LFUPolicy,
    LRUKCache,
    LRUPolicy,
    NoCache,
    make_policy,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class PolicyContract:
    """Subclasses set ``make`` to build the policy under test."""

    def make(self, maxsize: int, **kwargs: Any) -> Cache[Any, Any]:
        raise NotImplementedError

    def test_insert_then_read_back(self) -> None:
        cache = self.make(3)
        cache[1] = "a"
        cache[2] = "b"
        assert cache[1] == "a" and cache[2] == "b"
        assert len(cache) == 2 and 1 in cache and 3 not in cache
        assert cache.currsize == 2

    def test_update_keeps_one_entry(self) -> None:
        cache = self.make(2)
        cache[1] = "a"
        cache[1] = "b"
        assert cache[1] == "b"
        assert len(cache) == 1

    def test_delete_and_missing_key(self) -> None:
        cache = self.make(2)
        cache[1] = "a"
        del cache[1]
        assert 1 not in cache and len(cache) == 0
        with pytest.raises(KeyError):
            del cache[1]
        with pytest.raises(KeyError):
            cache[1]

    def test_pop_and_get_default(self) -> None:
        cache = self.make(2)
        cache[1] = "a"
        assert cache.pop(1) == "a"
        assert cache.pop(1, None) is None
        assert cache.get(1, "d") == "d"
        with pytest.raises(KeyError):
            cache.pop(1)

    def test_get_reads_as_membership_then_subscript(self) -> None:
        # a policy may answer get in one pass; it must leave the state a test
        # for the key and a read of it leave: the same uses, the same victims
        clock = FakeClock()
        by_get = self.make(6, ttl=50.0, timer=clock)
        by_read = self.make(6, ttl=50.0, timer=clock)
        for i in range(300):
            clock.now += 1
            key = (i * 7) % 11 if i % 4 else i % 3
            if i % 2:
                by_get[key] = by_read[key] = i
            else:
                read = by_read[key] if key in by_read else "absent"
                assert by_get.get(key, "absent") == read, i
        assert sorted(by_get.items()) == sorted(by_read.items())
        assert [by_get.popitem() for _ in range(len(by_get))] == [
            by_read.popitem() for _ in range(len(by_read))
        ]

    def test_popitem_empties_then_raises(self) -> None:
        cache = self.make(3)
        for key in range(3):
            cache[key] = str(key)
        popped = {cache.popitem()[0] for _ in range(3)}
        assert popped == {0, 1, 2}
        assert len(cache) == 0
        with pytest.raises(KeyError):
            cache.popitem()

    def test_capacity_is_never_exceeded(self) -> None:
        cache = self.make(5)
        for i in range(200):
            cache[i % 37] = i
            if i % 3 == 0:
                cache.get((i * 7) % 37)
            assert len(cache) <= 5 and cache.currsize <= 5

    def test_sizes_come_from_getsizeof(self) -> None:
        cache = self.make(10, getsizeof=len)
        cache["a"] = "xxxx"
        cache["b"] = "yyyy"
        assert cache.currsize == 8
        cache["c"] = "zzz"
        assert cache.currsize <= 10 and "c" in cache
        with pytest.raises(ValueError):
            cache["d"] = "w" * 11
        cache["c"] = "zz"
        assert cache.currsize <= 10

    def test_growing_value_may_evict_its_own_key_and_still_go_in(self) -> None:
        cache = self.make(4, getsizeof=len, ttl=10.0, timer=FakeClock())
        cache["a"] = "x"
        cache["b"] = "yy"
        cache["a"] = "zzz"  # room only by evicting both, "a"'s old value included
        assert cache["a"] == "zzz" and cache.currsize <= 4
        cache["c"] = "q"
        cache["d"] = "q"
        assert cache.currsize <= 4 and len(cache) <= 3

    def test_clear_removes_everything(self) -> None:
        cache = self.make(4)
        for key in range(4):
            cache[key] = key
        cache.clear()
        assert len(cache) == 0 and cache.currsize == 0
        cache[9] = 9
        assert cache[9] == 9

    def test_entries_expire_after_ttl_on_injected_clock(self) -> None:
        clock = FakeClock()
        cache = self.make(4, ttl=10.0, timer=clock)
        cache[1] = "a"
        clock.now += 5
        cache[2] = "b"
        assert cache[1] == "a"
        clock.now += 6
        assert 1 not in cache
        with pytest.raises(KeyError):
            cache[1]
        assert cache[2] == "b"
        clock.now += 10
        cache[3] = "c"
        assert 2 not in cache and len(cache) == 1

    def test_evictions_are_reported(self) -> None:
        cache = self.make(2)
        seen: list[Any] = []
        cache.on_evict = lambda key, value: seen.append(key)  # type: ignore[attr-defined]
        for key in range(5):
            cache[key] = key
        assert len(seen) == 3 and all(key not in cache for key in seen)


class TestLRU(PolicyContract):
    def make(self, maxsize: int, **kwargs: Any) -> Cache[Any, Any]:
        return LRUPolicy(maxsize, **kwargs)


class TestLFU(PolicyContract):
    def make(self, maxsize: int, **kwargs: Any) -> Cache[Any, Any]:
        return LFUPolicy(maxsize, **kwargs)


class TestARC(PolicyContract):
    def make(self, maxsize: int, **kwargs: Any) -> Cache[Any, Any]:
        return ARCCache(maxsize, **kwargs)


class TestLRUK(PolicyContract):
    def make(self, maxsize: int, **kwargs: Any) -> Cache[Any, Any]:
        return LRUKCache(maxsize, 2, **kwargs)


class TestLRUKCorrelated(PolicyContract):
    def make(self, maxsize: int, **kwargs: Any) -> Cache[Any, Any]:
        return LRUKCache(maxsize, 3, correlated_period=0.5, **kwargs)


class TestHybrid(PolicyContract):
    def make(self, maxsize: int, **kwargs: Any) -> Cache[Any, Any]:
        return HybridCache(maxsize, 3, 0.5, **kwargs)


class TestHybridAutoAlpha(PolicyContract):
    def make(self, maxsize: int, **kwargs: Any) -> Cache[Any, Any]:
        return HybridCache(maxsize, **kwargs)


def test_none_policy_stores_nothing_and_always_misses() -> None:
    cache: Cache[Any, Any] = NoCache(100)
    cache[1] = "a"
    assert 1 not in cache and len(cache) == 0 and cache.get(1) is None
    with pytest.raises(KeyError):
        cache[1]
    with pytest.raises(KeyError):
        cache.popitem()
    cache.clear()
    assert cache.maxsize == 0


@pytest.mark.parametrize("name", ["none", "lru", "lfu", "arc", "lruk", "hybrid"])
def test_make_policy_builds_every_named_policy(name: str) -> None:
    cache = make_policy(name, 8)
    assert cache.policy_name == name
    cache["k"] = "v"
    assert len(cache) == (0 if name == "none" else 1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("lru", 0), "capacity"),
        (("lru", -3), "capacity"),
        (("fifo", 8), "unknown cache policy"),
    ],
)
def test_make_policy_rejects_bad_arguments(args: tuple[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_policy(*args)


def test_make_policy_rejects_bad_k_and_alpha() -> None:
    with pytest.raises(ValueError, match="k must"):
        make_policy("lruk", 8, k=0)
    with pytest.raises(ValueError, match="alpha"):
        make_policy("hybrid", 8, alpha=0.9)
    with pytest.raises(ValueError, match="alpha"):
        make_policy("hybrid", 8, alpha="hot")
    with pytest.raises(ValueError, match="ttl"):
        make_policy("arc", 8, ttl=-1)

"""What each policy does that the others do not."""

from __future__ import annotations

import random
from typing import Any

import pytest
from cachetools import Cache

from cache.heat import ContextHeat, line_entropy
from cache.policies import (
    ARCCache,
    HybridCache,
    LRUKCache,
    OptimalCache,
    hot_limit_for,
    make_policy,
    t1_target_for,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def replay(cache: Cache[Any, Any], stream: list[int]) -> int:
    hits = 0
    for key in stream:
        try:
            cache[key]
            hits += 1
        except KeyError:
            cache[key] = key
    return hits


# -- ARC ---------------------------------------------------------------------------


def fill_arc_with_ghosts() -> ARCCache[int, int]:
    cache: ARCCache[int, int] = ARCCache(4)
    for key in (1, 2):  # T2 residents
        cache[key] = key
        cache[key]
    for key in (3, 4, 5, 6):  # pass through T1, pushing 3 and 4 into B1
        cache[key] = key
    return cache


def test_arc_b1_ghost_hit_increases_p() -> None:
    cache = fill_arc_with_ghosts()
    assert cache.sizes["b1"] >= 1
    before = cache.p
    ghost = 3
    cache[ghost] = ghost
    assert cache.p > before
    assert cache.stats()["ghostHitsB1"] == 1


def test_arc_b2_ghost_hit_decreases_p() -> None:
    cache: ARCCache[int, int] = ARCCache(4)
    for key in (1, 2, 3, 4):
        cache[key] = key
        cache[key]  # all in T2
    cache[10] = 10  # T2's LRU (1) becomes a B2 ghost
    assert cache.sizes["b2"] == 1
    cache._arc.p = 3.0  # as if earlier B1 hits had grown T1's target
    cache[1] = 1
    assert cache.p == pytest.approx(2.0)
    assert cache.stats()["ghostHitsB2"] == 1
    assert 1 in cache and cache.sizes["t2"] >= 1


def test_arc_resists_a_scan() -> None:
    cache: ARCCache[int, int] = ARCCache(10)
    hot = list(range(5))
    for _ in range(3):
        replay(cache, hot)
    replay(cache, list(range(100, 160)))  # a one-off scan
    assert all(key in cache for key in hot)


def test_arc_keeps_directory_bounded() -> None:
    cache: ARCCache[int, int] = ARCCache(8)
    rng = random.Random(3)
    replay(cache, [rng.randrange(50) for _ in range(3000)])
    sizes = cache.sizes
    assert sizes["t1"] + sizes["t2"] <= 8
    assert sizes["t1"] + sizes["b1"] <= 8
    assert sum(sizes.values()) <= 16
    assert 0 <= cache.p <= 8


# -- LRU-K -------------------------------------------------------------------------


def test_lruk_ranks_by_kth_most_recent_access() -> None:
    cache: LRUKCache[str, int] = LRUKCache(3, k=2)
    for key in ("a", "b", "c"):
        cache[key] = 0
    # second references in the order b, a, c: b has the oldest 2nd-most-recent reference
    cache["b"]
    cache["a"]
    cache["c"]
    cache["b"]  # b's K-th most recent is now its reference before: still older than a's
    cache["d"] = 0
    assert "a" not in cache
    assert {"b", "c", "d"} <= set(cache)


def test_lruk_evicts_keys_with_fewer_than_k_references_first_in_lru_order() -> None:
    cache: LRUKCache[str, int] = LRUKCache(3, k=2)
    cache["old"] = 0
    cache["hot"] = 0
    cache["hot"]
    cache["new"] = 0
    assert cache.backward_k_distance("old") is None
    cache["x"] = 0
    assert "old" not in cache and "hot" in cache and "new" in cache


def test_lruk_correlated_references_count_once() -> None:
    clock = FakeClock()
    cache: LRUKCache[str, int] = LRUKCache(2, k=2, correlated_period=1.0, timer=clock)
    cache["burst"] = 0
    clock.now += 0.1
    cache["burst"]  # same burst: still one reference
    assert cache.backward_k_distance("burst") is None
    clock.now += 5
    cache["burst"]
    assert cache.backward_k_distance("burst") is not None


def test_lruk_key_inside_its_correlated_period_is_not_evicted() -> None:
    clock = FakeClock()
    cache: LRUKCache[str, int] = LRUKCache(2, k=2, correlated_period=1.0, timer=clock)
    cache["a"] = 0
    clock.now += 5
    cache["b"] = 0  # b is the most recent, a is outside its period
    cache["c"] = 0
    assert "a" not in cache and "b" in cache


def test_lruk_retains_history_of_evicted_keys() -> None:
    cache: LRUKCache[str, int] = LRUKCache(2, k=2)
    cache["a"] = 0
    cache["a"]
    cache["b"] = 0
    cache["c"] = 0  # evicts b (infinite distance)
    cache["d"] = 0
    cache["e"] = 0
    assert "a" in cache
    cache.popitem()
    cache.popitem()
    cache["a"] = 0  # back: resumes its history of two references
    assert cache.backward_k_distance("a") is not None


def test_lruk_heap_stays_bounded_under_many_hits() -> None:
    cache: LRUKCache[int, int] = LRUKCache(4, k=2)
    for key in range(4):
        cache[key] = key
    for i in range(10_000):
        cache[i % 4]
    assert len(cache._order._heap) <= 2 * 4 + 65


# -- hybrid --------------------------------------------------------------------------


def test_hybrid_promotes_after_k_references_within_the_period() -> None:
    cache: HybridCache[str, int] = HybridCache(20, k=3, alpha=0.5, adapt_correlation=False)
    cache["hot"] = 0
    cache["hot"]
    assert not cache.in_hot_region("hot")
    cache["hot"]
    assert cache.in_hot_region("hot")


def test_hybrid_keeps_the_lruk_limit_on_every_insert() -> None:
    cache: HybridCache[int, int] = HybridCache(20, k=2, alpha=0.7, adapt_correlation=False)
    limit = hot_limit_for(20, 0.7)
    rng = random.Random(5)
    for _ in range(2000):
        key = rng.randrange(60)
        try:
            cache[key]
        except KeyError:
            cache[key] = key
        assert cache.regions["hot"] <= limit
        assert len(cache) <= 20
    assert cache.regions["hot"] == limit
    assert cache.demotions > 0


def test_hybrid_moves_the_t1_target_and_limit_with_alpha() -> None:
    low: HybridCache[int, int] = HybridCache(100, alpha=0.3)
    high: HybridCache[int, int] = HybridCache(100, alpha=0.7)
    assert low.t1_target == pytest.approx(100 * 0.3 * 0.6)
    assert high.t1_target == pytest.approx(100 * 0.7 * 0.6)
    assert low.p < high.p
    assert low.hot_limit > high.hot_limit
    low.set_alpha(0.7)
    assert low.p == pytest.approx(high.p)
    assert low.hot_limit == high.hot_limit == hot_limit_for(100, 0.7)
    assert t1_target_for(100, 0.5) == pytest.approx(30.0)


def test_hybrid_shrinks_the_lruk_region_when_alpha_rises() -> None:
    clock = FakeClock()
    heat = ContextHeat(window=10.0, saturation=5, timer=clock)
    cache: HybridCache[int, int] = HybridCache(40, k=2, heat=heat, adapt_correlation=False)
    for key in range(40):
        cache[key] = key
        cache[key]
        cache[key]
    calm_limit = cache.hot_limit
    assert cache.regions["hot"] == calm_limit
    for _ in range(10):
        heat.record(automatic=True, entropy=1.0)
    cache[1000] = 0
    assert cache.alpha == pytest.approx(0.7)
    assert cache.hot_limit < calm_limit
    assert cache.regions["hot"] <= cache.hot_limit


def test_hybrid_stats_expose_regions_and_alpha() -> None:
    cache: HybridCache[int, int] = HybridCache(10, alpha=0.4)
    replay(cache, [1, 2, 1, 3, 1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1])
    stats = cache.stats()
    assert stats["alpha"] == 0.4 and stats["alphaMode"] == "fixed"
    assert set(stats["regions"]) == {"hot", "t1", "t2", "b1", "b2"}
    assert set(stats["evictionsByRegion"]) == {"hot", "arc"}
    assert "p" in stats and "ghostHitsB1" in stats


# -- context heat ----------------------------------------------------------------------


def test_context_heat_is_neutral_when_idle_and_bounded() -> None:
    clock = FakeClock()
    heat = ContextHeat(window=10.0, saturation=4, timer=clock)
    assert heat.alpha() == 0.5
    for _ in range(8):
        heat.record(automatic=True, entropy=1.0)
    assert heat.alpha() == pytest.approx(0.7)
    clock.now += 11
    assert heat.alpha() == 0.5
    heat.record(automatic=False, entropy=0.0)
    assert 0.3 <= heat.alpha() < 0.5


def test_recorded_lines_give_the_signals_of_their_entropies_scored_when_read() -> None:
    lines = ["    return self.value", "x = 1", "    aaaaaaaa", "def greet(name):"]
    clock = FakeClock()
    eager = ContextHeat(window=10.0, saturation=8, timer=clock)
    lazy = ContextHeat(window=10.0, saturation=8, timer=clock)
    for i, line in enumerate(lines):
        eager.record(automatic=i % 2 == 0, entropy=line_entropy(line))
        lazy.record_line(automatic=i % 2 == 0, line_prefix=line)
        clock.now += 1
    assert lazy.signals() == pytest.approx(eager.signals())
    lazy.record_line(automatic=True, line_prefix="abcdefgh")
    eager.record(automatic=True, entropy=1.0)
    clock.now += 11  # all of them expire, scored or not
    lazy.record_line(automatic=False, line_prefix="zzzz")
    eager.record(automatic=False, entropy=0.0)
    assert lazy.signals() == pytest.approx(eager.signals()) == (0.0, 1 / 8, 0.0)
    assert lazy.alpha() == pytest.approx(eager.alpha())


def test_line_entropy_is_normalized() -> None:
    assert line_entropy("") == 0.0
    assert line_entropy("    aaaaaaaa") == 0.0
    assert line_entropy("abcdefgh") == pytest.approx(1.0)
    assert 0.0 < line_entropy("    return self.value") < 1.0


# -- OPT ---------------------------------------------------------------------------------


def test_opt_evicts_the_key_used_furthest_in_the_future() -> None:
    stream = [1, 2, 3, 1, 2, 4, 1, 2, 3]
    cache: OptimalCache[int, int] = OptimalCache(3, stream)
    hits = replay(cache, stream)
    # 3 is needed last, so it is the victim when 4 arrives
    assert hits == 4


def test_opt_rejects_being_driven_out_of_order() -> None:
    cache: OptimalCache[int, int] = OptimalCache(2, [1, 2])
    with pytest.raises(ValueError, match="out of order"):
        cache[2]


@pytest.mark.parametrize("seed", range(6))
def test_opt_is_never_beaten_on_random_streams(seed: int) -> None:
    rng = random.Random(seed)
    universe = rng.randrange(8, 60)
    stream = [min(int(rng.paretovariate(1.2)), universe) for _ in range(800)]
    stream += [rng.randrange(universe) for _ in range(800)]
    for capacity in (2, 5, 16):
        best = replay(OptimalCache(capacity, stream), stream)
        for name in ("lru", "lfu", "arc", "lruk", "hybrid"):
            assert replay(make_policy(name, capacity), stream) <= best, (name, capacity)

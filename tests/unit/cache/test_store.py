"""The completion store: verified exact hits, counted rejections, clear."""

from __future__ import annotations

from cachetools import LRUCache

from cache.entry import CachedCompletion
from cache.keys import LineAnchor, ScopeKey
from cache.policies import make_policy
from cache.store import CompletionStore
from tests.support.text import lines_text


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


ABOVE = ["class Point:", "    def norm(self):"]
PLACE = LineAnchor.build(language="python", context=lines_text(ABOVE), suffix_text="\n")
KEY = ScopeKey("python", "2-block-function_definition", 11, PLACE.suffix_fp)


def test_exact_hit_is_verified_and_counted() -> None:
    clock = FakeClock()
    store = CompletionStore(make_policy("hybrid", 8), timer=clock)
    stored = store.put(KEY, PLACE, "        ", "return abs(self)", context=lines_text(ABOVE))
    assert stored is not None and stored.created_at == 50.0
    hit = store.lookup(KEY, PLACE, "        ")
    assert hit is not None and hit.source == "exact" and hit.text == "return abs(self)"
    assert (store.exact_hits, store.typed_hits, store.misses) == (1, 0, 0)


def test_fingerprint_collision_is_rejected_and_counted() -> None:
    store = CompletionStore(make_policy("lru", 8))
    store.put(KEY, PLACE, "        ", "return abs(self)", context=lines_text(ABOVE))
    elsewhere = LineAnchor.build(language="python", context="x = 1\n", suffix_text="\n")
    # same key, different place: a collision must never be served
    assert store.lookup(KEY, elsewhere, "        ") is None
    # same key and place, but the line differs in a way typed-through cannot explain
    assert store.lookup(KEY, PLACE, "    ") is None
    assert store.rejections == 2
    assert store.misses == 2


def test_typed_hit_falls_back_after_a_rejected_exact_entry() -> None:
    store = CompletionStore(make_policy("arc", 8))
    store.put(KEY, PLACE, "        ", "return abs(self)", context=lines_text(ABOVE))
    hit = store.lookup(KEY, PLACE, "        return a")
    assert hit is not None and hit.source == "typed" and hit.text == "bs(self)"
    assert store.rejections == 1 and store.typed_hits == 1


def test_empty_text_is_not_stored() -> None:
    store = CompletionStore(make_policy("lru", 8))
    assert store.put(KEY, PLACE, "", "", context=lines_text(ABOVE)) is None
    assert len(store) == 0 and store.index_size == 0


def test_replacing_a_key_drops_the_old_answer_from_the_index() -> None:
    store = CompletionStore(make_policy("lru", 8))
    store.put(KEY, PLACE, "", "first()\nsecond()", context=lines_text(ABOVE))
    store.put(KEY, PLACE, "", "third()", context=lines_text(ABOVE))
    assert len(store) == 1 and store.index_size == 1
    assert store.lookup(KEY, PLACE, "fir") is None


def test_clear_reports_how_many_entries_were_removed() -> None:
    store = CompletionStore(make_policy("lfu", 8))
    for i in range(5):
        store.put(ScopeKey("python", "s", i, 0), PLACE, f"x{i}", "y", context=lines_text(ABOVE))
    assert store.clear() == 5
    assert len(store) == 0 and store.index_size == 0
    assert store.lookup(ScopeKey("python", "s", 1, 0), PLACE, "x1") is None


def test_none_policy_never_serves() -> None:
    store = CompletionStore(make_policy("none", 8))
    store.put(KEY, PLACE, "", "anything", context=lines_text(ABOVE))
    assert store.lookup(KEY, PLACE, "") is None
    assert store.lookup(KEY, PLACE, "any") is None
    assert store.index_size == 0


def test_entries_from_l2_are_served() -> None:
    store = CompletionStore(make_policy("hybrid", 8))
    arrived = CachedCompletion.from_json(
        CachedCompletion(key=KEY, anchor=PLACE, line_prefix="", text="pass", origin="l2").to_json()
    )
    store.add_entry(arrived)
    hit = store.lookup(KEY, PLACE, "")
    assert hit is not None and hit.source == "exact" and hit.entry.origin == "l2"


def test_expired_entries_leave_the_index_too() -> None:
    clock = FakeClock()
    store = CompletionStore(make_policy("hybrid", 8, ttl=30.0, timer=clock), timer=clock)
    store.put(KEY, PLACE, "", "value()", context=lines_text(ABOVE))
    clock.now += 31
    assert store.lookup(KEY, PLACE, "") is None
    assert store.lookup(KEY, PLACE, "va") is None
    assert store.index_size == 0


def test_a_plain_cachetools_policy_is_swept_so_the_index_stays_bounded() -> None:
    store = CompletionStore(LRUCache(4))
    for i in range(500):
        store.put(ScopeKey("python", "s", i, 0), PLACE, f"p{i}", "x", context=lines_text(ABOVE))
    assert len(store) == 4
    assert store.index_size <= 2 * 4 + 65


def test_stats_join_policy_state_and_counters() -> None:
    store = CompletionStore(make_policy("hybrid", 8, alpha=0.6))
    store.put(KEY, PLACE, "", "value()", context=lines_text(ABOVE))
    store.lookup(KEY, PLACE, "")
    stats = store.policy_stats()
    assert stats["policy"] == "hybrid" == store.policy_name
    assert stats["alpha"] == 0.6 and stats["capacity"] == 8 == store.capacity
    assert stats["exactHits"] == 1 and stats["size"] == 1

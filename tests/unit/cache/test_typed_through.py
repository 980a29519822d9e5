"""Typed-through lookups: serve the rest of a suggestion the user is typing."""

from __future__ import annotations

from cache.entry import CachedCompletion
from cache.keys import LineAnchor, ScopeKey
from cache.policies import make_policy
from cache.store import CompletionStore
from cache.typed import TypedThroughIndex
from tests.support.text import lines_text

ABOVE = ["def area(r):", '    """Circle area."""']
SUFFIX = "\n\nprint(area(2))\n"


def anchor(lines: list[str] = ABOVE, suffix: str = SUFFIX) -> LineAnchor:
    return LineAnchor.build(language="python", context=lines_text(lines), suffix_text=suffix)


def key(scope: str = "def area(r):\n    ") -> ScopeKey:
    return ScopeKey.build(
        language="python",
        scope_depth=1,
        node_type="block",
        parent_type="function_definition",
        scope_text=scope,
        suffix_text=SUFFIX,
    )


def entry(line_prefix: str, text: str, at: LineAnchor | None = None) -> CachedCompletion:
    return CachedCompletion(key=key(), anchor=at or anchor(), line_prefix=line_prefix, text=text)


def test_typed_through_serves_the_remaining_text() -> None:
    index = TypedThroughIndex()
    index.add(entry("    ", "return 3.14159 * r * r"))
    found = index.lookup(anchor(), "    retu")
    assert found is not None
    assert found[1] == "rn 3.14159 * r * r"


def test_typed_through_after_a_partial_accept() -> None:
    index = TypedThroughIndex()
    index.add(entry("    ", "return 3.14159 * r * r"))
    found = index.lookup(anchor(), "    return 3.14159 ")
    assert found is not None and found[1] == "* r * r"


def test_typed_through_misses_when_the_user_typed_something_else() -> None:
    index = TypedThroughIndex()
    index.add(entry("    ", "return 3.14159 * r * r"))
    assert index.lookup(anchor(), "    raise") is None
    assert index.lookup(anchor(["other"]), "    retu") is None


def test_typed_through_never_returns_empty_text() -> None:
    index = TypedThroughIndex()
    index.add(entry("    ", "pass"))
    assert index.lookup(anchor(), "    pass") is None
    assert index.lookup(anchor(), "    pas") is not None


def test_typed_through_prefers_the_longest_stored_prefix() -> None:
    index = TypedThroughIndex()
    index.add(entry("    ", "return r"))
    index.add(entry("    return ", "r * r * 3.14"))
    found = index.lookup(anchor(), "    return r")
    assert found is not None
    assert found[1] == " * r * 3.14"
    # the shorter prefix still serves what the longer one cannot
    index.add(entry("    return ", "math.pi"))
    found = index.lookup(anchor(), "    return r")
    assert found is not None and found[1] == " * r * 3.14"


def test_typed_through_index_splits_and_prunes_shared_prefixes() -> None:
    index = TypedThroughIndex()
    a = entry("    x = ", "1")
    b = entry("    xy = ", "2")
    c = entry("    ", "x = 5")
    for item in (a, b, c):
        index.add(item)
    assert len(index) == 3
    assert index.lookup(anchor(), "    xy = ") == (b, "2")
    assert index.discard(b) and not index.discard(b)
    assert index.lookup(anchor(), "    xy = ") is None
    assert index.lookup(anchor(), "    x = ") == (a, "1")
    index.discard(a)
    index.discard(c)
    assert len(index) == 0 and index.anchors() == 0


def test_multiline_continuation_is_served_after_enter_with_auto_indent() -> None:
    store = CompletionStore(make_policy("lru", 16))
    text = "if r < 0:\n        raise ValueError(r)\n    return 3.14159 * r * r"
    store.put(key(), anchor(), "    ", text, context=lines_text(ABOVE))
    # the user accepted line 0 and pressed Enter: the editor auto-indented 8 spaces
    next_lines = [*ABOVE, "    if r < 0:"]
    hit = store.lookup(key("changed scope"), anchor(next_lines), "        ")
    assert hit is not None and hit.source == "typed"
    assert hit.text == "raise ValueError(r)\n    return 3.14159 * r * r"
    # and the line after that, with a 4-space indent typed by hand
    after = [*next_lines, "        raise ValueError(r)"]
    hit = store.lookup(key("changed again"), anchor(after), "    ")
    assert hit is not None and hit.text == "return 3.14159 * r * r"


def test_typed_through_survives_typing_but_not_a_suffix_change() -> None:
    store = CompletionStore(make_policy("hybrid", 16))
    store.put(key(), anchor(), "    ", "return 3.14159 * r * r", context=lines_text(ABOVE))
    assert store.lookup(key("typed"), anchor(), "    return 3") is not None
    assert store.lookup(key("typed"), anchor(suffix="\nother\n"), "    return 3") is None


def test_index_is_pruned_when_the_policy_evicts() -> None:
    store = CompletionStore(make_policy("lru", 2))
    for i in range(10):
        place = anchor([f"line {i}"])
        store.put(
            key(f"s{i}"), place, "", f"value_{i}\nmore_{i}", context=lines_text([f"line {i}"])
        )
    assert len(store) == 2
    assert store.index_size == 4  # two answers and their continuations
    assert store.lookup(key("x"), anchor(["line 0"]), "val") is None
    assert store.lookup(key("x"), anchor(["line 9"]), "val") is not None
    assert store.evictions == 8


def test_typing_a_one_line_answer_to_its_end_needs_no_new_request() -> None:
    store = CompletionStore(make_policy("lru", 16))
    store.put(key(), anchor(), "    ", "return 3.14159 * r * r", context=lines_text(ABOVE))
    hit = store.lookup(key("typed all"), anchor(), "    return 3.14159 * r * r")
    assert hit is not None and hit.text == "" and hit.source == "typed"
    assert store.completed_hits == 1
    # one character more is a different line: a real miss
    assert store.lookup(key("more"), anchor(), "    return 3.14159 * r * r + 1") is None


def test_typing_to_the_end_of_an_answer_cut_at_the_token_limit_asks_again() -> None:
    banner = "    # " + "*" * 58
    store = CompletionStore(make_policy("lru", 16))
    store.put(key(), anchor(), "    ", banner[4:], context=lines_text(ABOVE), truncated=True)
    # the start is still served; the end is where the budget ran out, not the line's end
    hit = store.lookup(key("typed some"), anchor(), "    # **")
    assert hit is not None and hit.text == banner[8:]
    assert store.lookup(key("typed all"), anchor(), banner) is None
    assert store.completed_hits == 0


def test_a_cut_multi_line_answers_last_line_is_not_the_end_of_that_line() -> None:
    store = CompletionStore(make_policy("lru", 16))
    store.put(
        key(), anchor(), "    ", "x = 1\n    y = f(-(i as", context=lines_text(ABOVE),
        truncated=True,
    )
    below = anchor([*ABOVE, "    x = 1"])
    assert store.lookup(key("typed"), below, "    y = f(-(i as") is None

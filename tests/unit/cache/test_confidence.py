"""An answer's confidence: kept with the entry, applied from any point of its text."""

from __future__ import annotations

import pytest

from cache.entry import CachedCompletion, Confidence
from cache.keys import LineAnchor, ScopeKey
from cache.policies import make_policy
from cache.store import CompletionStore

CONF = Confidence.of_tokens([(0, 0.99), (4, 0.999), (8, 0.4), (12, 0.7), (20, 0.2)])


def test_sure_tokens_are_not_kept() -> None:
    assert CONF.doubts == ((0, 0.99), (8, 0.4), (12, 0.7), (20, 0.2))


def test_sure_length_is_where_the_first_token_below_the_bar_starts() -> None:
    assert CONF.sure_length(0.5) == 8
    assert CONF.sure_length(0.3) == 20
    assert CONF.sure_length(0.1) is None
    assert CONF.sure_length(0.995) == 0  # the first token itself is below


def test_typed_through_a_doubtful_token_moves_the_cut_to_the_next() -> None:
    assert CONF.sure_length(0.5, start=9) == 11  # from 9: the token at 20
    assert CONF.after(9).sure_length(0.5) == 11


def test_tokens_after_the_first_meet_the_onward_bar() -> None:
    assert CONF.sure_length(0.35, onward=0.75) == 8  # 0.4 starts it, past the first token
    assert CONF.sure_length(0.995, onward=0.5) == 0  # the first token is judged by the bar
    assert CONF.sure_length(0.35, start=8, onward=0.75) == 4  # from 8: 0.4 is the first token
    assert CONF.sure_length(0.5, onward=0.3) == 8  # an onward bar below the bar is the bar


def test_entry_round_trips_its_confidence_and_older_entries_lack_it() -> None:
    key = ScopeKey.build(language="python", scope_depth=0, node_type="m", parent_type="",
                         scope_text="", suffix_fp=1)
    anchor = LineAnchor.build(language="python", context="", suffix_fp=1)
    entry = CachedCompletion(key=key, anchor=anchor, line_prefix="x = ", text="foo(bar)",
                             confidence=CONF)
    assert CachedCompletion.from_json(entry.to_json()).confidence == CONF
    plain = CachedCompletion(key=key, anchor=anchor, line_prefix="x = ", text="foo")
    assert "confidence" not in plain.to_json()
    assert CachedCompletion.from_json(plain.to_json()).confidence is None
    with pytest.raises(ValueError):
        CachedCompletion.from_json(plain.to_json()[:-1] + ',"confidence":[[1]]}')


def test_continuations_keep_the_confidence_of_their_own_lines() -> None:
    store = CompletionStore(make_policy("lru", 16))
    key = ScopeKey.build(language="python", scope_depth=1, node_type="block",
                         parent_type="function_definition", scope_text="def f():\n",
                         suffix_fp=7)
    anchor = LineAnchor.build(language="python", context="def f():\n", suffix_fp=7)
    text = "    a = 1\n    b = g()\n"
    # doubts at "a" (4) and at "g" (18): line 1 starts at 10
    confidence = Confidence.of_tokens([(4, 0.6), (18, 0.3)])
    store.put(key, anchor, "", text, context="def f():\n", confidence=confidence)
    line_two = anchor.with_context("def f():\n" + "    a = 1\n")
    hit = store.lookup(key, line_two, "    ")
    assert hit is not None and hit.text == "b = g()\n"
    assert hit.entry.confidence == Confidence(((8, 0.3),))

"""The L2 entry format: the cut survives a round trip, old entries still read, no local facts."""

from __future__ import annotations

import dataclasses
import json

from cache.entry import CachedCompletion
from cache.keys import LineAnchor, ScopeKey

KEY = ScopeKey.build(
    language="rust", scope_depth=2, node_type="block", parent_type="function_item",
    scope_text="fn key() {\n    ", suffix_text="}\n",
)
ANCHOR = LineAnchor.build(language="rust", context="fn key() {\n", suffix_text="}\n")


def entry(**changes: object) -> CachedCompletion:
    base = CachedCompletion(key=KEY, anchor=ANCHOR, line_prefix="    ", text="let a = (b as")
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_a_cut_answer_stays_cut_through_l2() -> None:
    back = CachedCompletion.from_json(entry(truncated=True).to_json())
    assert back.truncated is True and back.text == "let a = (b as"


def test_an_answer_that_ended_on_its_own_writes_no_truncated_field() -> None:
    raw = entry().to_json()
    assert "truncated" not in json.loads(raw)
    assert CachedCompletion.from_json(raw).truncated is False


def test_an_entry_written_before_the_field_existed_reads_as_not_cut() -> None:
    old = json.loads(entry().to_json())
    old.pop("truncated", None)
    back = CachedCompletion.from_json(json.dumps(old))
    assert back.truncated is False and back.key == KEY and back.anchor == ANCHOR


def test_how_a_process_got_an_entry_is_never_written() -> None:
    raw = entry(from_l2=True).to_json()
    assert "from" not in "".join(json.loads(raw))
    assert CachedCompletion.from_json(raw).from_l2 is False
    assert entry(from_l2=True) == entry()  # the same answer, wherever it was read

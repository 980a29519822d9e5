"""The slow-model session's score on hand-made sessions: keys, suggestions and characters apart."""

from __future__ import annotations

from tests.support.typing_session import (
    ClientRun,
    SessionScore,
    Shown,
    TypingScript,
    new_suggestions,
    tab_savings,
    typing_script,
    useful,
)

SOURCE = "def f():\n    x = 1\n    return x\n"


def _script() -> TypingScript:
    """``    x = 1`` and ``    return x`` typed back after ``def f():`` (15 keys)."""
    return typing_script(SOURCE, 1, 2)


def _session(shown: dict[int, tuple[str, float]]) -> list[Shown]:
    """What a client showed: by key index, the text and when it appeared."""
    keys = _script().keys
    return [
        Shown(key, shown[i][0], shown[i][1]) if i in shown else Shown(key, None)
        for i, key in enumerate(keys)
    ]


def _typed_through(start: int, text: str, at: float, keys: int) -> dict[int, tuple[str, float]]:
    """``text`` appearing at key ``start``, on screen for ``keys`` keys typed through it."""
    return {start + i: (text[i:], at if i == 0 else 0.0) for i in range(keys)}


def test_the_script_knows_what_is_typed_next_on_the_line_and_beyond() -> None:
    keys = _script().keys
    assert len(keys) == 15
    enter = keys[0]
    assert (enter.line, enter.character, enter.expect) == (1, 4, "x = 1")
    assert enter.ahead == "x = 1\n    return x"
    assert (keys[5].expect, keys[5].ahead) == ("", "\n    return x")
    assert keys[6].edit[4] == "\n    " and keys[6].ahead == "return x"
    assert keys[14].ahead == ""


def test_a_suggestion_typed_through_is_one_suggestion_but_a_useful_key_per_character() -> None:
    # why "useful suggestions" and "characters saved" came out equal: a
    # suggestion of the line's rest, on screen while it is typed through,
    # makes one useful key per character, and Tab saves those characters
    shown = _session(_typed_through(0, "x = 1", 0.3, 5))
    score = SessionScore.of(ClientRun("hand-made", shown))
    assert score.useful_keys == 5
    assert score.chars_saved_line == 5
    assert score.suggestions == score.useful_suggestions == 1


def test_keys_suggestions_and_characters_on_a_hand_made_session() -> None:
    whole = "x = 1\n    return x"
    shown = {
        **_typed_through(0, whole, 0.3, 5),  # right over both lines, typed through
        6: ("pass", 0.2),  # wrong
        7: ("eturn y", 0.5),  # wrong
        **_typed_through(8, "turn x", 0.1, 6),  # right, typed through
    }
    score = SessionScore.of(ClientRun("hand-made", _session(shown)))
    assert score.keys == 15
    assert score.shown == 13
    assert score.useful_keys == 11
    assert score.wrong_keys == 2
    assert score.suggestions == 4
    assert score.useful_suggestions == 2
    # on the line: "x = 1" (5) at the Enter, "turn x" (6) after "re"
    assert score.chars_saved_line == 11
    # over several lines: the whole two-line suggestion at the Enter (5 + 1 + 12)
    assert score.chars_saved_lines == 18
    assert (score.new_latency_p50, score.new_latency_p90) == (0.3, 0.5)


def test_after_a_tab_the_keys_it_saved_show_nothing_that_counts() -> None:
    # a second right suggestion inside the accepted text saves nothing more
    shown = {0: ("x = 1", 0.1), 2: ("= 1", 0.1)}
    assert tab_savings(_session(shown)) == 5
    assert [item.key.expect for item in new_suggestions(_session(shown))] == ["x = 1", "= 1"]


def test_a_part_of_the_line_saves_its_characters_and_a_longer_line_saves_none() -> None:
    assert tab_savings(_session({0: ("x = ", 0.1)})) == 4
    assert tab_savings(_session({0: ("x = 10", 0.1)})) == 0
    assert useful("x = 10", "x = 1")  # useful to see, wrong to accept whole


def test_over_several_lines_a_wrong_later_line_falls_back_to_the_first() -> None:
    shown = _session({0: ("x = 1\n    return y", 0.1)})
    assert tab_savings(shown, several_lines=True) == 5
    assert tab_savings(shown) == 5


def test_at_the_end_of_a_line_nothing_is_useful_on_the_line() -> None:
    assert not useful(")", "")
    assert not useful("\n    return x", "return x")
    shown = _session({5: (")", 0.1)})
    assert SessionScore.of(ClientRun("hand-made", shown)).useful_keys == 0


def test_a_session_without_suggestions_has_no_latency_and_no_seconds_per_useful() -> None:
    score = SessionScore.of(ClientRun("hand-made", _session({}), busy_seconds=3.0))
    assert score.new_latency_p50 is None and score.new_latency_p90 is None
    assert score.seconds_per_useful is None


def test_the_benchmark_rows_carry_every_figure_for_both_clients() -> None:
    from tests.bench.bench_slow_model import rows_against

    whole = "x = 1\n    return x"
    ours = SessionScore.of(ClientRun("ours", _session(_typed_through(0, whole, 0.3, 5))))
    theirs = SessionScore.of(ClientRun("theirs", _session({6: ("pass", 0.2)}), busy_seconds=2.0))
    rows = {made["name"].split(", vs ")[0]: made for made in rows_against(ours, theirs, "peer")}
    assert rows["useful suggestions shown"]["value"] == 1
    assert rows["characters Tab would have saved, first lines"]["value"] == 5
    assert rows["characters Tab would have saved, over several lines"]["value"] == 18
    wrong = rows["keys with a wrong suggestion on screen"]
    assert (wrong["value"], wrong["baseline"], wrong["ratio"]) == (0, 1, 0.0)
    latency = rows["new-suggestion latency p50"]
    assert (latency["value"], latency["baseline"]) == (0.3, 0.2)
    per_useful = rows["server seconds per useful suggestion"]
    assert per_useful["baseline"] is None and per_useful["ratio"] is None
    assert rows["server busy seconds"]["baseline"] == 2.0

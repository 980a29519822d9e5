"""A sure answer runs on past its line; an unsure line ends it (``AnswerBounds``)."""

from __future__ import annotations

from lsp_server.completion.bounds import AnswerBounds, Cut


def run_on(**changes: object) -> AnswerBounds:
    return AnswerBounds.for_cursor(
        multiline=False, line_prefix="    total = ", suffix="", max_generation_ms=1000,
        bar=0.3, run_on=True, **changes,  # type: ignore[arg-type]
    )


def test_without_confidence_a_one_line_place_ends_at_its_line() -> None:
    bounds = AnswerBounds.for_cursor(
        multiline=False, line_prefix="    x = ", suffix="", max_generation_ms=1000, run_on=True
    )
    assert not bounds.run_on
    assert bounds.cut("1\n    y = 2\n", 0.0) == Cut(1, truncated=False)


def test_a_sure_answer_runs_on_through_lines_at_the_same_indentation() -> None:
    bounds = run_on()
    assert bounds.cut("0\n    count = 0\n", 0.0) is None
    # a line indented less has left the block
    assert bounds.cut("0\n    count = 0\nreturn\n", 0.0) == Cut(15, truncated=False)


def test_an_unsure_first_line_ends_the_answer_there() -> None:
    assert run_on().cut("scale(x)\n    y = 1\n", 0.0, first_doubt=2) == Cut(8, truncated=False)


def test_a_later_unsure_line_ends_the_answer_before_it_even_while_written() -> None:
    text = "0\n    count = 0\n    limit = 9"
    doubt = text.index("9")
    assert run_on().cut(text, 0.0, first_doubt=doubt) == Cut(15, truncated=True)
    assert run_on().cut(text + "\n", 0.0, first_doubt=doubt) == Cut(15, truncated=True)


def test_a_block_ends_before_its_first_unsure_line_past_the_first() -> None:
    bounds = AnswerBounds.for_cursor(
        multiline=True, line_prefix="def f():", suffix="", max_generation_ms=1000, bar=0.3
    )
    text = "\n    a = 1\n    b = g()\n"
    assert bounds.cut(text, 0.0) is None
    assert bounds.cut(text, 0.0, first_doubt=text.index("g")) == Cut(10, truncated=True)


def test_time_still_bounds_a_run_on() -> None:
    assert run_on().cut("0\n    count = 0\n", 2.0) == Cut(15, truncated=True)


def test_past_its_first_token_a_block_is_judged_by_the_onward_bar() -> None:
    bounds = AnswerBounds.for_cursor(
        multiline=True, line_prefix="def f():", suffix="", max_generation_ms=1000,
        bar=0.3, onward=0.6,
    )
    assert not bounds.doubts(0, 0.5)  # the first token: against 0.3
    assert bounds.doubts(4, 0.5)  # a later one: against 0.6
    assert not bounds.doubts(4, 0.7)
    plain = AnswerBounds.for_cursor(
        multiline=True, line_prefix="def f():", suffix="", max_generation_ms=1000, bar=0.3
    )
    assert not plain.doubts(4, 0.5)  # no onward bar: the bar everywhere

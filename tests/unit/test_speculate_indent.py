"""The post-accept state the prefetcher predicts: accept, Enter, the editor's auto-indent."""

from __future__ import annotations

import pytest

from lsp_server.speculate import after_accept, next_line_indent


def test_block_opener_indents_the_next_line() -> None:
    assert after_accept("    def area(w, h)", ":") == (":\n        ", "        ")


def test_plain_statement_keeps_the_indentation() -> None:
    assert after_accept("    total = ", "a + b") == ("a + b\n    ", "    ")


@pytest.mark.parametrize("opener", ["(", "[", "{"])
def test_bracket_left_open_at_line_end_gets_a_continuation_indent(opener: str) -> None:
    inserted, indent = after_accept("    values = ", f"compute{opener}")
    assert indent == "        "
    assert inserted == f"compute{opener}\n        "


def test_bracket_closed_on_the_same_line_keeps_the_indentation() -> None:
    assert after_accept("    x = ", "f(a, [1, 2])")[1] == "    "


@pytest.mark.parametrize(
    "statement", ["return total", "pass", "raise ValueError(x)", "break", "continue", "return"]
)
def test_block_ending_statement_dedents_the_next_line(statement: str) -> None:
    prefix = "        "
    assert after_accept(prefix, statement) == (statement + "\n    ", "    ")


def test_names_that_merely_start_like_a_keyword_do_not_dedent() -> None:
    assert next_line_indent("        returned = passes + breaks") == "        "
    assert next_line_indent("        continue_at = 3") == "        "


def test_dedent_at_top_level_stays_at_column_zero() -> None:
    assert next_line_indent("pass") == ""


def test_opener_wins_over_a_dedenting_keyword() -> None:
    assert next_line_indent("    return (") == "        "


def test_multi_line_suggestion_is_judged_by_its_last_line() -> None:
    inserted, indent = after_accept("    if ready", ":\n        return value")
    assert indent == "    "
    assert inserted == ":\n        return value\n    "


def test_trailing_spaces_after_an_opener_do_not_hide_it() -> None:
    assert next_line_indent("    for item in items:   ") == "        "

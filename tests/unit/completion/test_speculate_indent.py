"""The post-accept state the prefetcher predicts: accept, Enter, the editor's auto-indent.

These are Python's rules; every language's are checked against its sample in
``test_languages.py``.
"""

from __future__ import annotations

import pytest

from lsp_server.completion.speculate import after_accept as accept_in
from lsp_server.documents.languages import PYTHON
from lsp_server.documents.languages.go import GO
from lsp_server.documents.languages.indentation import indent_unit
from lsp_server.documents.languages.indentation import next_line_indent as indent_after_line


def after_accept(prefix: str, suggestion: str) -> tuple[str, str]:
    return accept_in(prefix, suggestion, PYTHON)


def next_line_indent(line: str) -> str:
    return indent_after_line(line, PYTHON)


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


def test_the_indent_step_follows_the_document_not_four_spaces() -> None:
    assert accept_in("  def f(x)", ":", PYTHON, "  ") == (":\n    ", "    ")
    assert indent_after_line("\tif x {", GO, "\t") == "\t\t"


def test_indent_unit_reads_tabs_or_the_commonest_step() -> None:
    assert indent_unit(["func f() {", "\tx := 1", "}"], "    ") == "\t"
    assert indent_unit(["a {", "  b {", "    c", "  }", "}"], "    ") == "  "
    assert indent_unit(["x = 1", "y = 2"], "   ") == "   "


def test_a_text_only_document_indents_after_a_brace_or_colon_only() -> None:
    assert accept_in("  if (x) ", "{")[1] == "      "
    assert accept_in("  ", "return x")[1] == "  "

"""What of a suggestion is shown: cut where the model is unsure, without what repeats."""

from __future__ import annotations

import pytest

from cache.entry import Confidence
from lsp_server.completion.gate import (
    REPEAT,
    UNSURE,
    WHITESPACE,
    ShowBar,
    Surroundings,
    Verdict,
    before_open_string,
    gate,
    line_above_of,
    next_line_of,
    strings_of,
)

BAR = ShowBar(min_probability=0.5)
AT_END = Surroundings(line_prefix="    total = ", line_suffix="")


def sure(*doubts: tuple[int, float]) -> Confidence:
    return Confidence.of_tokens(doubts)


def test_a_suggestion_is_cut_where_its_first_unsure_token_starts() -> None:
    text = "compute(values, factor)"
    assert gate(text, sure((8, 0.9), (14, 0.2)), BAR, AT_END) == Verdict("compute(values")


def test_past_its_first_token_a_suggestion_meets_the_onward_bar() -> None:
    # the example the slow-model session showed: a right start, a hesitant " and"
    text = "while pos < len(source) and source[pos] != quote:"
    doubts = sure((0, 0.4), (len("while pos < len(source)"), 0.5))
    onward = ShowBar(min_probability=0.35, min_onward_probability=0.6)
    assert gate(text, doubts, onward, AT_END) == Verdict("while pos < len(source)")
    assert gate(text, doubts, ShowBar(min_probability=0.35), AT_END) == Verdict(text)


@pytest.mark.parametrize(
    ("cut", "shown"),
    [
        ('add_argument("id", type=int, help="', 'add_argument("id", type=int'),
        ('print(f"', "print("),
        ('msg = "it', "msg ="),
        ("say('done')", "say('done')"),  # closed: nothing to trim
        ("# don't do", "# don't do"),  # a quote inside a word opens no string
    ],
)
def test_a_cut_inside_a_string_it_opened_is_trimmed_to_before_that_string(
    cut: str, shown: str
) -> None:
    assert before_open_string(cut) == shown


def test_a_suggestion_cut_while_unsure_of_a_string_ends_before_it() -> None:
    text = 'add_argument("id", type=int, help="the item")'
    doubts = sure((len('add_argument("id", type=int, help="'), 0.2))
    assert gate(text, doubts, BAR, AT_END) == Verdict('add_argument("id", type=int')


def unsure_from(text: str, fragment: str) -> Confidence:
    """The model unsure from ``fragment`` in ``text`` on (sure before it)."""
    return sure((text.index(fragment), 0.2))


def in_language(language: str, line_prefix: str = "") -> Surroundings:
    return Surroundings(line_prefix, "", strings=strings_of(language))


def test_a_rust_lifetime_or_label_opens_no_string() -> None:
    text = "fn parse<'a>(input: &str) -> Option<usize>"
    shown = gate(text, unsure_from(text, "Option"), BAR, in_language("rust"))
    assert shown == Verdict("fn parse<'a>(input: &str) -> ")
    label = "'outer: loop {"
    assert gate(label, unsure_from(label, "loop"), BAR, in_language("rust")) == Verdict("'outer: ")


def test_a_rust_char_literal_holding_a_quote_opens_no_string() -> None:
    text = 'let q = \'"\'; let s = "x";'
    shown = gate(text, unsure_from(text, "let s"), BAR, in_language("rust"))
    assert shown == Verdict("let q = '\"'; ")


@pytest.mark.parametrize(
    ("language", "text", "unsure_at", "shown"),
    [
        ("javascript", "const msg = `Hello ${name}`;", "name", "const msg ="),
        ("typescript", "const q = sql`SELECT * FROM t`;", "SELECT", "const q ="),
        ("go", "re := regexp.MustCompile(`\\d+`)", "\\d", "re := regexp.MustCompile("),
        ("csharp", 'var path = @"C:\\temp\\log.txt";', "temp", "var path ="),
        ("csharp", 'var s = $"Hello {name}";', "name", "var s ="),
        ("rust", 'let re = Regex::new(r#"\\d+"#)?;', "\\d", "let re = Regex::new("),
        ("rust", 'let bytes = br"\\x";', "\\x", "let bytes ="),
        ("cpp", 'auto s = R"(a \\ b)";', "a \\", "auto s ="),
        ("cpp", 'auto s = u8"caf\u00e9";', "caf", "auto s ="),
        ("c", 'wchar_t *s = L"wide";', "wide", "wchar_t *s ="),
        ("shellscript", "echo $'tab\\there'", "tab", "echo"),
        ("lua", "local s = [[long text]]", "long", "local s ="),
    ],
)
def test_a_string_the_language_opens_is_trimmed_with_its_prefix(
    language: str, text: str, unsure_at: str, shown: str
) -> None:
    assert gate(text, unsure_from(text, unsure_at), BAR, in_language(language)) == Verdict(shown)


@pytest.mark.parametrize(
    ("language", "text", "unsure_at", "shown"),
    [
        ("javascript", 'fetch(url, { method: "POST" })', "POST", "fetch(url, {"),
        ("csharp", 'Log(level, message: "done");', "done", "Log(level"),
        ("rust", 'Point { name: "origin" }', "origin", "Point {"),
        ("php", 'foo(1, name: "x");', "x", "foo(1"),
        ("shellscript", 'cmd --name="value"', "value", "cmd"),
        ("python", 'add(x, help="the item")', "the", "add(x"),
    ],
)
def test_a_keyword_and_its_separator_go_with_the_string_they_give(
    language: str, text: str, unsure_at: str, shown: str
) -> None:
    assert gate(text, unsure_from(text, unsure_at), BAR, in_language(language)) == Verdict(shown)


def test_in_a_string_the_developer_left_open_the_first_quote_closes_it() -> None:
    # the part that closes the developer's string stays; the new string goes
    text = 'world!", end="\\n")'
    around = Surroundings('print("hello, ', "")
    assert gate(text, unsure_from(text, "\\n"), BAR, around) == Verdict('world!"')
    # a suggestion that stays inside the developer's string is not trimmed
    inside = 'world and more")'
    assert gate(inside, unsure_from(inside, "more"), BAR, around) == Verdict("world and ")


def test_in_a_comment_a_quote_opens_no_string() -> None:
    text = 'the "docs" page'
    around = in_language("python", line_prefix="    # see ")
    assert gate(text, unsure_from(text, "docs"), BAR, around) == Verdict('the "')


def test_an_unknown_language_keeps_the_default_reading() -> None:
    assert strings_of("cobol") is Surroundings("", "").strings
    text = 'say(msg="hi")'
    assert gate(text, unsure_from(text, "hi"), BAR, in_language("cobol")) == Verdict("say(")


def test_a_suggestion_whose_start_is_unsure_is_held_back() -> None:
    assert gate("compute(x)", sure((0, 0.3)), BAR, AT_END) == Verdict("", UNSURE)
    # cut to nothing but blanks is as unsure
    assert gate("  compute(x)", sure((2, 0.3)), BAR, AT_END) == Verdict("", UNSURE)


def test_without_probabilities_or_bar_nothing_is_cut() -> None:
    assert gate("compute(x)", None, BAR, AT_END) == Verdict("compute(x)")
    assert gate("compute(x)", sure((0, 0.01)), ShowBar(0.0), AT_END) == Verdict("compute(x)")


def test_a_block_is_cut_at_the_end_of_the_last_line_before_the_unsure_one() -> None:
    block = "\n    a = 1\n    b = compute()\n    return b"
    at_opener = Surroundings(line_prefix="def f():", line_suffix="")
    unsure_at = block.index("compute")
    assert gate(block, sure((unsure_at, 0.1)), BAR, at_opener) == Verdict("\n    a = 1")
    # unsure on the second line of a block: whole first line kept
    first_line_doubt = sure((block.index("1"), 0.1))
    assert gate(block, first_line_doubt, BAR, at_opener) == Verdict("", UNSURE)


def test_a_block_is_bounded_in_lines() -> None:
    block = "".join(f"\n    a{i} = {i}" for i in range(12))
    shown = gate(block, None, ShowBar(0.5, max_lines=4), Surroundings("def f():", "")).text
    assert shown.count("\n") == 3


def test_the_part_that_repeats_the_text_after_the_cursor_is_trimmed() -> None:
    around = Surroundings(line_prefix="print(", line_suffix=")")
    assert gate("name)", None, BAR, around) == Verdict("name")
    assert gate(")", None, BAR, around) == Verdict("", REPEAT)


def test_a_line_that_repeats_the_line_below_or_above_is_held_back() -> None:
    around = Surroundings("    ", "", next_line="return total", line_above="total = 0")
    assert gate("return total", None, BAR, around) == Verdict("", REPEAT)
    assert gate("total = 0", None, BAR, around) == Verdict("", REPEAT)
    assert gate("total += 1", None, BAR, around) == Verdict("total += 1")


def test_block_lines_that_reach_the_next_line_or_loop_are_cut() -> None:
    around = Surroundings("def f():", "", next_line="return x")
    assert gate("\n    x = 1\n    return x\n", None, BAR, around) == Verdict("\n    x = 1")
    looping = "\n    x += 1\n    x += 1\n    x += 1"
    assert gate(looping, None, BAR, around) == Verdict("\n    x += 1")
    assert gate("\n    return x", None, BAR, around) == Verdict("", REPEAT)


@pytest.mark.parametrize("text", ["   ", ")", "])", "  }", "\n  \n", '")', ";"])
def test_only_whitespace_or_closers_is_held_back(text: str) -> None:
    assert gate(text, None, BAR, AT_END) == Verdict("", WHITESPACE)


def test_the_text_around_is_read_from_its_nearest_non_blank_lines() -> None:
    assert next_line_of("tail of line\n\n   \n    return x\nmore") == "return x"
    assert next_line_of("only this line") == ""
    assert line_above_of("a = 1\n    b = 2\n\n") == "b = 2"
    assert line_above_of("") == ""

"""Where an answer being streamed ends: one line, a block, the text that is already there."""

from __future__ import annotations

from lsp_server.completion.bounds import MAX_SUGGESTION_LINES, AnswerBounds, Cut


def bounds(*, multiline: bool, prefix: str = "    ", suffix: str = "", limit_ms: float = 0) -> (
    AnswerBounds
):
    return AnswerBounds.for_cursor(
        multiline=multiline, line_prefix=prefix, suffix=suffix, max_generation_ms=limit_ms
    )


def test_a_one_line_answer_ends_at_its_first_line_end() -> None:
    one = bounds(multiline=False)
    assert one.cut("x = 1", 0.0) is None
    assert one.cut("x = 1\n    y", 0.0) == Cut(5, truncated=False)
    # the model says the line is done: nothing to add
    assert one.cut("\nreturn", 0.0) == Cut(0, truncated=False)


def test_a_block_ends_before_a_line_that_leaves_it() -> None:
    block = bounds(multiline=True, prefix="    if x:")
    text = "\n        a()\n        b()\n    c()\n"
    cut = block.cut(text, 0.0)
    assert cut == Cut(len("\n        a()\n        b()"), truncated=False)
    assert block.cut("\n        a()\n\n", 0.0) is None  # blank lines do not end it


def test_a_block_keeps_a_closing_bracket_at_its_own_indentation_and_ends_there() -> None:
    block = bounds(multiline=True, prefix="    if (x) {")
    text = "\n        a();\n    }\n    b();\n"
    assert block.cut(text, 0.0) == Cut(len("\n        a();\n    }"), truncated=False)


def test_a_block_ends_where_the_model_repeats_the_text_after_the_cursor() -> None:
    block = bounds(multiline=True, prefix="def f(x):", suffix="\n    return x\n")
    text = "\n    x += 1\n    return x\n"
    assert block.cut(text, 0.0) == Cut(len("\n    x += 1"), truncated=False)


def test_a_block_is_cut_by_lines_and_by_generation_time() -> None:
    block = bounds(multiline=True, prefix="def f():", limit_ms=500)
    lines = "".join(f"\n    a{i}()" for i in range(MAX_SUGGESTION_LINES + 2)) + "\n"
    cut = block.cut(lines, 0.0)
    assert cut is not None and cut.truncated
    assert lines[: cut.length].count("\n") == MAX_SUGGESTION_LINES - 1
    assert block.cut("\n    a()\n    b", 0.4) is None
    assert block.cut("\n    a()\n    b", 0.6) == Cut(len("\n    a()"), truncated=True)
    # time alone never cuts before a line with something on it
    assert block.cut("\n", 5.0) is None


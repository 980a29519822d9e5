"""Accepted ranges followed through edits, and the kept-characters measure."""

from __future__ import annotations

import random

import pytest

from lsp_server.observe.retained import (
    AcceptedRange,
    FollowedText,
    Point,
    extent,
    kept_chars,
    locate,
    measured_length,
    utf16_units,
)


def lcs(a: str, b: str) -> int:
    """The textbook quadratic longest common subsequence, to check against."""
    row = [0] * (len(b) + 1)
    for ch in a:
        prev = 0
        for j, other in enumerate(b, start=1):
            prev, row[j] = row[j], prev + 1 if ch == other else max(row[j], row[j - 1])
    return row[-1]


# -- the measure -------------------------------------------------------------------------


def test_untouched_text_is_kept_whole() -> None:
    assert kept_chars("return key, value", "return key, value") == 17


def test_deleting_half_of_an_accepted_line_keeps_half() -> None:
    accepted = 'partition(":")'
    assert kept_chars(accepted, accepted[: len(accepted) // 2]) == len(accepted) // 2


def test_text_typed_inside_the_range_does_not_count_as_kept() -> None:
    assert kept_chars("abc", "aXXbYYc") == 3


def test_rewritten_text_keeps_only_what_survived_in_order() -> None:
    assert kept_chars("value.strip()", "value.zzzzz()") == len("value.") + len("()")
    assert kept_chars("abc", "cba") == 1
    assert kept_chars("abc", "") == 0
    assert kept_chars("", "abc") == 0


def test_kept_chars_matches_the_quadratic_definition_on_random_texts() -> None:
    rng = random.Random(7)
    for _ in range(300):
        a = "".join(rng.choice("ab(c) \n") for _ in range(rng.randint(0, 40)))
        b = "".join(rng.choice("ab(c) \nx") for _ in range(rng.randint(0, 40)))
        assert kept_chars(a, b) == lcs(a, b), (a, b)


def test_a_huge_paste_inside_the_range_is_read_only_up_to_the_bound() -> None:
    accepted = "x = compute(a, b)"
    pasted = accepted + "y" * 100_000
    assert kept_chars(accepted, pasted) == len(accepted)
    assert measured_length(accepted) < 1000


# -- following the range ----------------------------------------------------------------


def follow(start: Point, end: Point, *edits: tuple[Point, Point, str]) -> tuple[Point, Point]:
    where = AcceptedRange(start, end)
    for edit_start, edit_end, text in edits:
        where.edit(edit_start, edit_end, extent(text))
    return where.start, where.end


def test_typing_after_the_range_end_leaves_it_alone() -> None:
    assert follow((4, 4), (4, 20), ((4, 20), (4, 20), "x")) == ((4, 4), (4, 20))
    assert follow((4, 4), (4, 20), ((4, 20), (4, 20), "\n    ")) == ((4, 4), (4, 20))


def test_an_insertion_at_the_start_moves_the_range() -> None:
    assert follow((4, 4), (4, 20), ((4, 4), (4, 4), "ab")) == ((4, 6), (4, 22))


def test_a_line_inserted_above_moves_the_range_down() -> None:
    assert follow((4, 4), (5, 3), ((1, 0), (1, 0), "import os\n")) == ((5, 4), (6, 3))


def test_lines_deleted_above_move_it_up() -> None:
    assert follow((4, 4), (5, 3), ((1, 0), (3, 0), "")) == ((2, 4), (3, 3))


def test_an_edit_earlier_on_its_line_shifts_its_columns() -> None:
    assert follow((4, 10), (4, 20), ((4, 2), (4, 5), "")) == ((4, 7), (4, 17))


def test_a_deletion_inside_shrinks_it() -> None:
    assert follow((4, 4), (4, 20), ((4, 12), (4, 20), "")) == ((4, 4), (4, 12))


def test_deleting_it_entirely_leaves_an_empty_range() -> None:
    start, end = follow((4, 4), (4, 20), ((4, 0), (4, 30), ""))
    assert start == end == (4, 0)


def test_a_replacement_over_its_end_includes_the_new_text() -> None:
    assert follow((4, 4), (4, 20), ((4, 10), (4, 25), "abc")) == ((4, 4), (4, 13))


def test_a_replacement_over_its_start_includes_the_new_text() -> None:
    assert follow((4, 4), (4, 20), ((4, 0), (4, 8), "ab")) == ((4, 0), (4, 14))


def test_a_multi_line_insertion_inside_moves_the_end_to_a_later_line() -> None:
    assert follow((4, 4), (4, 20), ((4, 10), (4, 10), "\n  x\n")) == ((4, 4), (6, 10))


def test_positions_count_utf16_code_units() -> None:
    assert utf16_units("a😀b") == 4
    assert extent("x😀\ny😀") == (1, 3)
    assert extent("a\r\nb\rc") == (2, 1)


@pytest.mark.parametrize("seed", range(40))
def test_the_range_holds_the_accepted_text_after_random_edits_elsewhere(seed: int) -> None:
    rng = random.Random(seed)
    lines = [f"line {i} of the file" for i in range(12)]
    accepted = "ACCEPTED"
    lines[6] = "    " + accepted + " tail"
    where = AcceptedRange((6, 4), (6, 4 + len(accepted)))
    for _ in range(30):
        row = rng.choice([r for r in range(len(lines)) if r != where.start[0]])
        col = rng.randint(0, len(lines[row]))
        if rng.random() < 0.5:
            text = rng.choice(["x", "yy", "\n", "a\nb"])
            start = end = (row, col)
        else:
            text = ""
            start, end = (row, 0), (row, col)
        before = "\n".join(lines)
        offsets = [0]
        for line in lines:
            offsets.append(offsets[-1] + len(line) + 1)
        s = offsets[start[0]] + start[1]
        e = offsets[end[0]] + end[1]
        lines = (before[:s] + text + before[e:]).split("\n")
        where.edit(start, end, extent(text))
    assert where.start[0] == where.end[0]
    assert lines[where.start[0]][where.start[1] : where.end[1]] == accepted


# -- following an accept as pieces, and finding it again --------------------------------


def follow_text(
    start: Point, end: Point, *edits: tuple[Point, Point, str]
) -> tuple[FollowedText, list[bool]]:
    where = FollowedText.at(start, end)
    whole = [where.edit(s, e, extent(text), len(text)) for s, e, text in edits]
    return where, whole


def test_a_block_inserted_inside_splits_the_text_and_is_not_part_of_it() -> None:
    body = "\n".join("        x = 1" for _ in range(200))
    where, whole = follow_text((1, 4), (4, 22), ((2, 8), (2, 12), body))
    assert whole == [False]
    assert [(p.start, p.end) for p in where.pieces] == [((1, 4), (2, 8)), ((201, 13), (203, 22))]


def test_a_small_edit_inside_a_line_stays_in_its_piece() -> None:
    where, _ = follow_text((4, 4), (4, 20), ((4, 8), (4, 11), "abcd"))
    assert [(p.start, p.end) for p in where.pieces] == [((4, 4), (4, 21))]


def test_an_edit_over_two_pieces_merges_them() -> None:
    where, _ = follow_text((0, 0), (0, 40), ((0, 10), (0, 10), "\n\n"), ((0, 5), (2, 5), "zz"))
    assert [(p.start, p.end) for p in where.pieces] == [((0, 0), (0, 32))]


def test_an_edit_over_the_whole_text_is_reported_not_adopted() -> None:
    where, whole = follow_text((4, 4), (4, 44), ((3, 0), (9, 0), "anything"))
    assert whole == [True]
    assert (where.start, where.end) == ((4, 4), (4, 44))


def test_an_insertion_at_its_start_still_moves_it() -> None:
    where, whole = follow_text((4, 4), (4, 44), ((4, 4), (4, 4), "ab"))
    assert whole == [False] and (where.start, where.end) == ((4, 6), (4, 46))


def test_locate_finds_the_exact_text_nearest_where_it_was() -> None:
    line = "return sum(item.price for item in items)"
    text = f"a\n    {line}\nb\nc\nd\n    {line}\n"
    assert locate(line, text, 5) == (text.rindex(line), len(line))
    assert locate(line, text, 1) == (text.index(line), len(line))


def test_locate_takes_a_line_changed_a_little() -> None:
    line = "return sum(item.price for item in items)"
    text = "x = 1\n    return sum(item.cost for item in items)\ny = 2\n"
    index, length = locate(line, text, 1)  # type: ignore[misc]
    assert text[index : index + length] == "    return sum(item.cost for item in items)"


def test_locate_finds_nothing_in_unrelated_code() -> None:
    line = "return sum(item.price for item in items)"
    text = "def main(argv):\n    parser = build_parser(argv)\n    return run(parser.parse())\n"
    assert locate(line, text, 1) is None
    assert locate(line, "", 0) is None

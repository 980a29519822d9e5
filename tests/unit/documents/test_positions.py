from __future__ import annotations

import random
import re

import pytest
from lsprotocol.types import PositionEncodingKind

from lsp_server.documents.positions import TextBuffer, encode_text

UTF8 = PositionEncodingKind.Utf8
UTF16 = PositionEncodingKind.Utf16
UTF32 = PositionEncodingKind.Utf32


def buffer(text: str) -> TextBuffer:
    return TextBuffer(encode_text(text))


def reference_line_starts(data: bytes) -> list[int]:
    return [0] + [m.end() for m in re.finditer(rb"\r\n?|\n", data)]


def test_ascii_positions_are_the_same_in_every_encoding() -> None:
    buf = buffer("def f():\n    return 1\n")
    for enc in (UTF8, UTF16, UTF32):
        r = buf.resolve(1, 4, enc)
        assert (r.offset, r.line, r.character, r.clamped) == (13, 1, 4, False)
        assert buf.position_of(13, enc) == (1, 4)


def test_emoji_is_two_utf16_units_one_utf32_point_four_utf8_bytes() -> None:
    buf = buffer("a😀b")
    after_emoji = 1 + 4
    assert buf.resolve(0, 3, UTF16).offset == after_emoji
    assert buf.resolve(0, 2, UTF32).offset == after_emoji
    assert buf.resolve(0, 5, UTF8).offset == after_emoji
    assert buf.position_of(after_emoji, UTF16) == (0, 3)
    assert buf.position_of(after_emoji, UTF32) == (0, 2)
    assert buf.position_of(after_emoji, UTF8) == (0, 5)


def test_position_inside_a_surrogate_pair_snaps_to_the_pair_start_and_says_so() -> None:
    buf = buffer("a😀b")
    r = buf.resolve(0, 2, UTF16)
    assert (r.offset, r.character, r.clamped) == (1, 1, True)


def test_utf8_position_inside_a_multibyte_character_snaps_back() -> None:
    buf = buffer("é=1")
    r = buf.resolve(0, 1, UTF8)
    assert (r.offset, r.character, r.clamped) == (0, 0, True)


def test_character_past_end_of_line_clamps_to_line_end() -> None:
    buf = buffer("ab\r\ncd\n")
    r = buf.resolve(0, 99, UTF16)
    assert (r.offset, r.line, r.character, r.clamped) == (2, 0, 2, True)


def test_line_past_end_clamps_to_end_of_document() -> None:
    buf = buffer("ab\ncd")
    r = buf.resolve(7, 3, UTF16)
    assert (r.offset, r.line, r.character, r.clamped) == (5, 1, 2, True)


def test_negative_values_clamp_to_the_start() -> None:
    buf = buffer("ab\ncd")
    assert buf.resolve(-1, 5, UTF16).offset == 0
    r = buf.resolve(1, -3, UTF16)
    assert (r.offset, r.clamped) == (3, True)


def test_crlf_lone_cr_and_lf_all_end_lines() -> None:
    buf = buffer("a\r\nb\rc\nd")
    assert buf.line_count == 4
    assert [buf.line_start(i) for i in range(4)] == [0, 3, 5, 7]
    assert [buf.line_end(i) for i in range(4)] == [1, 4, 6, 8]
    assert buf.position_of(2, UTF16) == (0, 1), "inside CRLF maps to the end of the line"


def test_text_ending_in_newline_has_an_empty_last_line() -> None:
    buf = buffer("x\n")
    assert buf.line_count == 2
    assert buf.resolve(1, 0, UTF16).offset == 2


def test_tree_sitter_points_count_rows_only_at_lf() -> None:
    buf = buffer("a\rb\nc")
    assert buf.ts_point(2) == (0, 2), "a lone CR is not a tree-sitter row break"
    assert buf.ts_point(4) == (1, 0)
    crlf = buffer("ab\r\ncd")
    assert crlf.ts_point(5) == (1, 1)


def test_long_line_resolves_from_a_bounded_window() -> None:
    line = "x" * 100_000 + "é" + "y" * 10
    buf = buffer(line)
    r = buf.resolve(0, 100_001, UTF16)
    assert r.offset == 100_002 and not r.clamped


def test_insert_newline_after_cr_joins_it_into_crlf() -> None:
    buf = buffer("a\rb")
    buf.replace(2, 2, b"\n")
    assert bytes(buf.data) == b"a\r\nb"
    assert [buf.line_start(i) for i in range(buf.line_count)] == [0, 3]


def test_deleting_lf_of_crlf_leaves_a_lone_cr_line_break() -> None:
    buf = buffer("a\r\nb")
    buf.replace(2, 3, b"")
    assert [buf.line_start(i) for i in range(buf.line_count)] == [0, 2]
    assert buf.ts_point(2) == (0, 2)


def test_line_index_stays_exact_under_random_edits_far_apart() -> None:
    rnd = random.Random(7)
    alphabet = [b"a", b"\n", b"\r", b"\r\n", b"\xc3\xa9", b" "]
    for _ in range(200):
        data = bytearray(b"".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 30))))
        buf = TextBuffer(bytes(data))
        for _ in range(10):
            start = rnd.randint(0, len(data))
            end = rnd.randint(start, len(data))
            new = b"".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 5)))
            buf.replace(start, end, new)
            data[start:end] = new
            starts = reference_line_starts(bytes(data))
            assert [buf.line_start(i) for i in range(buf.line_count)] == starts
            for offset in range(len(data) + 1):
                assert buf.line_of(offset) == max(i for i, s in enumerate(starts) if s <= offset)
                row = data.count(b"\n", 0, offset)
                assert buf.ts_point(offset) == (row, offset - (data.rfind(b"\n", 0, offset) + 1))


@pytest.mark.parametrize("enc", [UTF8, UTF16, UTF32])
def test_resolve_and_position_of_round_trip(enc: PositionEncodingKind) -> None:
    buf = buffer("x = '😀é'\r\n\tprint(x)  # ok\rend")
    for line in range(buf.line_count):
        for offset in range(buf.line_start(line), buf.line_end(line) + 1):
            if offset < len(buf.data) and (buf.data[offset] & 0xC0) == 0x80:
                continue
            pos = buf.position_of(offset, enc)
            assert buf.resolve(*pos, enc).offset == offset

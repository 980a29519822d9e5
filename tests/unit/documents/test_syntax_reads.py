"""The bounded text windows the syntax context reads."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lsp_server.documents.positions import encode_text
from lsp_server.documents.syntax_reads import head_text, tail_text

ALPHABET = st.sampled_from(["a", "b", " ", "\n", "é", "€", "😀", "\t", "{", "}"])


@st.composite
def windows(draw: st.DrawFn) -> tuple[str, int, int, int]:
    text = draw(st.text(ALPHABET, max_size=60))
    first = draw(st.integers(0, len(text)))
    last = draw(st.integers(first, len(text)))
    return text, first, last, draw(st.integers(0, 40))


def byte_offsets(text: str, first: int, last: int) -> tuple[bytearray, int, int]:
    return (
        bytearray(encode_text(text)),
        len(encode_text(text[:first])),
        len(encode_text(text[:last])),
    )


@given(windows())
def test_tail_text_is_the_last_characters_of_the_range(window: tuple[str, int, int, int]) -> None:
    text, first, last, chars = window
    data, start, end = byte_offsets(text, first, last)
    assert tail_text(data, start, end, chars) == (text[first:last][-chars:] if chars else "")


@given(windows())
def test_head_text_is_the_first_characters_of_the_range(window: tuple[str, int, int, int]) -> None:
    text, first, last, chars = window
    data, start, end = byte_offsets(text, first, last)
    assert head_text(data, start, end, chars) == text[first:last][:chars]


def test_an_ascii_window_is_read_without_looking_further_back() -> None:
    data = bytearray("€ abc def".encode())
    assert tail_text(data, 0, len(data), 3) == "def"
    assert head_text(data, 4, len(data), 3) == "abc"

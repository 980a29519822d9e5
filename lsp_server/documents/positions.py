r"""Where things are in a document: its UTF-8 text, its lines, and LSP positions.

A document's text lives in a ``TextBuffer``: the UTF-8 bytes in a
``bytearray`` (an edit is one memmove, and tree-sitter parses the same bytes)
plus the byte offset where each line starts. Offsets everywhere in the server
are UTF-8 byte offsets; LSP positions are ``(line, character)`` with the
character counted in the negotiated ``PositionEncodingKind`` (UTF-16 code
units by default, UTF-8 bytes or UTF-32 code points when negotiated).

Lines end at ``\n``, ``\r\n`` or a lone ``\r``, as LSP specifies. A
position never raises: a character past the end of its line clamps to the end
of the line, a line past the end clamps to the end of the document, a
character inside a surrogate pair or a multi-byte character snaps back to its
start; ``ResolvedPosition.clamped`` tells the caller it happened.

The line index is updated per edit without touching every line: lines after
an edit are shifted lazily (one pending ``(first line, delta)`` pair that is
only settled over the lines between two edits), so typing costs the same in a
20,000-line file as in a 50-line one.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import NamedTuple, Protocol

from lsprotocol.types import PositionEncodingKind

#: a line terminator as LSP defines it
_TERMINATOR = re.compile(rb"\r\n?|\n")
_UTF16 = "utf-16-le"
_PASS = "surrogatepass"


def encode_text(text: str) -> bytes:
    """UTF-8 bytes of editor text (lone surrogates from JSON are kept, not rejected)."""
    return text.encode("utf-8", _PASS)


def decode_text(data: bytes | bytearray) -> str:
    """Inverse of ``encode_text``; a cut multi-byte character becomes U+FFFD."""
    try:
        return data.decode("utf-8", _PASS)
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")


def char_start(data: bytes | bytearray, offset: int) -> int:
    """``offset`` moved back to the first byte of the UTF-8 character it falls in."""
    while 0 < offset < len(data) and (data[offset] & 0xC0) == 0x80:
        offset -= 1
    return offset


#: the largest value of LSP's ``uinteger``, the type of a position's line and character
UINTEGER_MAX = 2**31 - 1


class PositionLike(Protocol):
    """An LSP position as reading one needs it: ``Cursor`` or ``lsprotocol.types.Position``."""

    @property
    def line(self) -> int:
        """The line, from 0."""
        ...

    @property
    def character(self) -> int:
        """The character in the line, counted in the negotiated position encoding."""
        ...


class Cursor(NamedTuple):
    """An LSP position, built where a request's params are read without pygls's converter.

    ``lsprotocol.types.Position`` is an attrs class whose validators run
    on every one built; a keystroke's request answered from the cache
    (the inline completion's immediate route) builds this instead, after
    checking the same range (``UINTEGER_MAX``).
    """

    line: int
    character: int


class ResolvedPosition(NamedTuple):
    """An LSP position mapped onto the text, after clamping."""

    offset: int
    line: int
    character: int
    clamped: bool


class TextBuffer:
    """UTF-8 text with an incrementally maintained line index."""

    def __init__(self, data: bytes | bytearray = b"") -> None:
        self.data = bytearray()
        self._starts: list[int] = [0]
        self._shift_from = 1
        self._shift = 0
        self._lone_cr = 0
        self.ascii = True
        self.set_text(data)

    def set_text(self, data: bytes | bytearray) -> None:
        """Replace the whole text and rebuild the index."""
        self.data[:] = data
        self._starts = [0] + [m.end() for m in _TERMINATOR.finditer(self.data)]
        # lines at index >= _shift_from start at _starts[i] + _shift
        self._shift_from = len(self._starts)
        self._shift = 0
        self._lone_cr = self._count_lone_cr(0, len(self.data))
        #: the whole text is ASCII, so every encoding's column is a byte column
        self.ascii = self.data.isascii()

    def __len__(self) -> int:
        return len(self.data)

    @property
    def line_count(self) -> int:
        """Number of lines (an empty text, or one ending in a newline, has an empty last line)."""
        return len(self._starts)

    def line_start(self, line: int) -> int:
        """Byte offset where ``line`` starts (0 <= line < line_count)."""
        start = self._starts[line]
        return start + self._shift if line >= self._shift_from else start

    def line_end(self, line: int) -> int:
        """Byte offset where ``line``'s content ends, before its terminator."""
        starts = self._starts
        if line + 1 >= len(starts):
            return len(self.data)
        # ``line_start`` of the line and the next, inline: a keystroke's context asks often
        shift, shift_from = self._shift, self._shift_from
        start = starts[line] + shift if line >= shift_from else starts[line]
        end = starts[line + 1] + shift if line + 1 >= shift_from else starts[line + 1]
        data = self.data
        if end - 2 >= start and data[end - 1] == 0x0A and data[end - 2] == 0x0D:
            return end - 2
        return end - 1

    def line_of(self, offset: int) -> int:
        """The line containing byte ``offset`` (clamped into the text)."""
        offset = max(0, min(offset, len(self.data)))
        k = self._shift_from
        if k < len(self._starts) and offset >= self._starts[k] + self._shift:
            return bisect_right(self._starts, offset - self._shift, k) - 1
        return bisect_right(self._starts, offset, 0, k) - 1

    def ts_point(self, offset: int) -> tuple[int, int]:
        r"""Tree-sitter's ``(row, byte column)`` of ``offset``: rows end only at ``\n``."""
        if self._lone_cr == 0:
            line = self.line_of(offset)
            return line, offset - self.line_start(line)
        # A lone CR starts an LSP line but not a tree-sitter row; such files are
        # rare, so they pay a scan instead of everyone paying for a second index.
        row = self.data.count(b"\n", 0, offset)
        return row, offset - (self.data.rfind(b"\n", 0, offset) + 1)

    def end_point(self) -> tuple[int, int]:
        """Tree-sitter point of the end of the text."""
        return self.ts_point(len(self.data))

    def replace(self, start: int, end: int, new: bytes) -> None:
        """Replace bytes ``[start, end)`` with ``new``, keeping the line index exact.

        Only a window one byte wider than the edit on each side is rescanned
        (wider still where it would cut a CRLF): that is where a CR can join
        an LF or a line break can appear or vanish. Line starts outside it
        stay, or shift by the size difference.
        """
        data = self.data
        n = len(data)
        start = max(0, min(start, n))
        end = max(start, min(end, n))
        lo = max(0, start - 1)
        if 0 < lo < n and data[lo - 1 : lo + 1] == b"\r\n":
            lo -= 1
        hi = min(n, end + 1)
        if 0 < hi < n and data[hi - 1 : hi + 1] == b"\r\n":
            hi += 1
        # index range of the line starts s with lo < s <= hi
        first = self.line_of(lo) + 1
        if (
            b"\n" not in new
            and b"\r" not in new
            and data.find(b"\n", lo, end) < 0
            and data.find(b"\r", lo, end) < 0
        ):
            # typing inside a line: no line break is made, cut or joined, so the
            # line starts after the edit only shift
            self._settle(first)
            data[start:end] = new
            self.ascii = self.ascii and new.isascii()
            self._shift += len(new) - (end - start)
            if first >= len(self._starts):
                self._shift_from, self._shift = len(self._starts), 0
            return
        last = self.line_of(hi)
        self._settle(last + 1)
        old_lone = self._count_lone_cr(lo, hi)

        data[start:end] = new
        # stays True while only ASCII is typed; a deletion never rescans the file
        self.ascii = self.ascii and new.isascii()
        delta = len(new) - (end - start)
        found = [m.end() for m in _TERMINATOR.finditer(data, lo, hi + delta)]
        self._starts[first : last + 1] = found
        self._shift_from = first + len(found)
        self._shift += delta
        if self._shift_from >= len(self._starts):
            self._shift_from, self._shift = len(self._starts), 0
        self._lone_cr += self._count_lone_cr(lo, hi + delta) - old_lone

    def resolve(
        self, line: int, character: int, encoding: PositionEncodingKind
    ) -> ResolvedPosition:
        """Map an LSP position to a byte offset, clamping anything out of range."""
        clamped = False
        if line < 0:
            line, character, clamped = 0, 0, True
        if character < 0:
            character, clamped = 0, True
        if line >= len(self._starts):
            offset = len(self.data)
            line, char = self.position_of(offset, encoding)
            return ResolvedPosition(offset, line, char, True)
        start = self.line_start(line)
        end = self.line_end(line)
        if self.ascii:
            column = min(character, end - start)
            return ResolvedPosition(start + column, line, column, clamped or column < character)
        column, snapped = byte_column(self.data, start, end, character, encoding)
        offset = start + column
        char = character
        if snapped:
            char = character_column(self.data[start:offset], encoding)
        return ResolvedPosition(offset, line, char, clamped or snapped)

    def position_of(self, offset: int, encoding: PositionEncodingKind) -> tuple[int, int]:
        """The LSP ``(line, character)`` of byte ``offset`` (clamped into the text)."""
        offset = char_start(self.data, max(0, min(offset, len(self.data))))
        line = self.line_of(offset)
        start = self.line_start(line)
        offset = min(offset, self.line_end(line))
        if self.ascii:
            return line, offset - start
        return line, character_column(self.data[start:offset], encoding)

    def _settle(self, line: int) -> None:
        """Move the lazy shift's boundary to ``line``, touching only the lines between."""
        k, d = self._shift_from, self._shift
        if d and k < line:
            self._starts[k:line] = [s + d for s in self._starts[k:line]]
        elif d and k > line:
            self._starts[line:k] = [s - d for s in self._starts[line:k]]
        self._shift_from = line

    def _count_lone_cr(self, start: int, end: int) -> int:
        crs = self.data.count(b"\r", start, end)
        return crs - self.data.count(b"\r\n", start, end) if crs else 0


def byte_column(
    data: bytes | bytearray, start: int, end: int, character: int, encoding: PositionEncodingKind
) -> tuple[int, bool]:
    """Bytes from ``start`` covering ``character`` units of the line ``data[start:end]``.

    Returns the byte count and whether the character had to be clamped or
    snapped. Only the bytes the character can span are looked at.
    """
    length = end - start
    if encoding == PositionEncodingKind.Utf8:
        if character >= length:
            return length, character > length
        column = char_start(data, start + character) - start
        return column, column != character
    # one UTF-16 unit or UTF-32 code point never needs more than 4 bytes
    cut = start + 4 * character + 4
    window = bytes(data[start : end if cut >= end else char_start(data, cut)])
    if window.isascii():
        return min(character, length), character > length
    text = decode_text(window)
    if encoding == PositionEncodingKind.Utf32:
        if character >= len(text):
            return length, character > len(text)
        return len(encode_text(text[:character])), False
    units = text.encode(_UTF16, _PASS)
    if 2 * character >= len(units):
        return length, 2 * character > len(units)
    head = units[: 2 * character]
    snapped = False
    last = int.from_bytes(head[-2:], "little") if head else 0
    if 0xD800 <= last <= 0xDBFF:
        head, snapped = head[:-2], True  # inside a surrogate pair: back to its start
    return len(encode_text(head.decode(_UTF16, _PASS))), snapped


def character_column(line_head: bytes | bytearray, encoding: PositionEncodingKind) -> int:
    """The character count of ``line_head`` (a line's bytes up to a position)."""
    if encoding == PositionEncodingKind.Utf8 or line_head.isascii():
        return len(line_head)
    text = decode_text(line_head)
    if encoding == PositionEncodingKind.Utf32:
        return len(text)
    return len(text.encode(_UTF16, _PASS)) // 2

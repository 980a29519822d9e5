"""Accepted text followed through later edits, and how much of it is still there.

An accepted suggestion occupies a range of the document. ``AcceptedRange``
keeps one range current edit by edit, in the document's own position units
(``(line, character)``, UTF-16 code units unless the client negotiated
otherwise), at a constant cost per edit:

* an edit before the range, or an insertion exactly at its start, moves it
  (an edit within one earlier line that adds or removes no line break
  changes nothing here, and costs only that check);
* an edit after it, or an insertion exactly at its end, leaves it alone (so
  typing on after an accepted line is not counted as part of it);
* an edit inside it, or overlapping it, changes its extent: text the edit
  inserts there counts as part of the range, text it deletes is gone.

``FollowedText`` follows one accept as a few such pieces: an edit strictly
inside a piece that brings a line break or more than ``SPLIT_CHARS``
characters (a skeleton filled in, a block pasted in the middle) splits it,
so the new text is not read as the accepted text's and the accepted tail
after it stays measured however large the insertion. An edit that replaces
the whole followed text (a formatter's whole-document replace, seen as one
edit from the first to the last differing character; a paste over the
block) is not adopted: ``locate`` looks for the accepted text in what
replaced it, near where it was, and the followed text becomes what it finds
there, or nothing.

``kept_chars`` then compares what the pieces hold now with the accepted
text: the accepted characters still there, in order, i.e. the longest common
subsequence of the two (the insert/delete edit distance is
``len(accepted) + len(now) - 2 * kept``). It is computed bit-parallel
(Allison and Dix, 1986; Crochemore et al., 2001): one pass over the current
text with the accepted text as the bits of one integer, after stripping what
the two share at both ends. Each piece is read up to a bound
(``measured_length``): the small in-line edits a piece can still take in
only add a few characters each.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass

#: a document position: (line, character) in the document's position units
Point = tuple[int, int]
#: the length of a text in the document's position units (UTF-16 code units by default)
Units = Callable[[str], int]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")

#: each piece of a followed text is read up to this many times the accepted
#: text's length (plus ``MEASURED_EXTRA`` characters): a piece holds accepted
#: characters and the small in-line edits made among them, so a longer piece
#: is one that took in many such edits, and its far end is not read
MEASURED_SLACK = 4
MEASURED_EXTRA = 256
#: an edit strictly inside a piece splits it when it inserts a line break or
#: more than this many characters; a smaller in-line edit (a word retyped)
#: stays inside the piece and is compared by content
SPLIT_CHARS = 16
#: pieces one accept is followed as, at most; past it an edit inside is taken in
MAX_PIECES = 8
#: ``locate`` looks this many lines either side of where the accepted text was
LOCATE_LINES = 32
#: ``locate`` takes a window of the new text as the accepted text, changed,
#: when it keeps at least this share of its characters (unrelated code of the
#: same length keeps a third to a half of a line by chance)
LOCATE_SHARE = 0.6


def utf16_units(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (LSP's default position unit)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def extent(text: str, units: Units = utf16_units) -> tuple[int, int]:
    """How far ``text`` reaches: its line breaks and the length of its last line."""
    if "\n" not in text and "\r" not in text:
        return 0, units(text)
    breaks = 0
    last = 0
    for match in _LINE_BREAK.finditer(text):
        breaks += 1
        last = match.end()
    return breaks, units(text[last:])


def advance(point: Point, reach: tuple[int, int]) -> Point:
    """The point after text of extent ``reach`` that starts at ``point``."""
    breaks, last = reach
    if breaks == 0:
        return point[0], point[1] + last
    return point[0] + breaks, last


@dataclass(slots=True)
class AcceptedRange:
    """Where accepted text is now; ``start`` <= ``end``, both in position units."""

    start: Point
    end: Point

    def edit(self, start: Point, end: Point, reach: tuple[int, int]) -> None:
        """Follow one edit that replaced ``[start, end)`` with text of extent ``reach``."""
        if start >= self.end:
            return  # after the range, or an insertion at its end
        if end <= self.start:
            if end[0] < self.start[0] and start[0] == end[0] and reach[0] == 0:
                return  # within one earlier line, no line break: nothing here moves
            # before the range, or an insertion at its start: it moves as a whole
            self.start = _moved(self.start, start, end, reach)
            self.end = _moved(self.end, start, end, reach)
            return
        if self.start == self.end:
            self.end = self.start = min(start, self.start)  # nothing left: nothing to take in
            return
        # inside or overlapping: the inserted text is part of the range
        if start < self.start:
            self.start = start
        if end <= self.end:
            self.end = _moved(self.end, start, end, reach)
        else:
            self.end = advance(start, reach)


def _moved(point: Point, start: Point, end: Point, reach: tuple[int, int]) -> Point:
    """``point`` (at or after ``end``) after ``[start, end)`` became text of extent ``reach``."""
    breaks, last = reach
    if point[0] == end[0]:
        column = (start[1] if breaks == 0 else 0) + last + point[1] - end[1]
        return start[0] + breaks, column
    return point[0] + breaks - (end[0] - start[0]), point[1]


@dataclass(slots=True)
class FollowedText:
    """Where one accept's text is now: its pieces, in document order (at least one)."""

    pieces: list[AcceptedRange]

    @classmethod
    def at(cls, start: Point, end: Point) -> FollowedText:
        """The accepted text between ``start`` and ``end``, in one piece."""
        return cls([AcceptedRange(start, end)])

    @property
    def start(self) -> Point:
        """Where its first piece starts."""
        return self.pieces[0].start

    @property
    def end(self) -> Point:
        """Where its last piece ends."""
        return self.pieces[-1].end

    def edit(self, start: Point, end: Point, reach: tuple[int, int], size: int) -> bool:
        """Follow one edit of ``size`` characters; True when it replaced the whole text.

        On True nothing is changed: the caller looks for the accepted text in
        the edit's text (``locate``) and calls ``found`` with what it finds.
        """
        pieces = self.pieces
        last = pieces[-1]
        if start >= last.end:
            return False  # after it, or an insertion at its end
        first = pieces[0]
        if end <= first.start:  # before it, or an insertion at its start: it moves
            if end[0] < first.start[0] and start[0] == end[0] and reach[0] == 0:
                return False  # within one earlier line, no line break: nothing here moves
            for piece in pieces:
                piece.start = _moved(piece.start, start, end, reach)
                piece.end = _moved(piece.end, start, end, reach)
            return False
        if start <= first.start and end >= last.end and first.start < last.end:
            return True
        if len(pieces) == 1:
            hit = [0] if start < first.end and end > first.start else []
        else:
            hit = [i for i, piece in enumerate(pieces) if start < piece.end and end > piece.start]
        if len(hit) > 1:  # over several pieces: what lies between them is taken in
            merged = AcceptedRange(pieces[hit[0]].start, pieces[hit[-1]].end)
            pieces[hit[0] : hit[-1] + 1] = [merged]
        done: AcceptedRange | None = None
        if hit:
            piece = pieces[hit[0]]
            if (
                piece.start < start
                and end < piece.end
                and (reach[0] > 0 or size > SPLIT_CHARS)
                and len(pieces) < MAX_PIECES
            ):
                done = AcceptedRange(advance(start, reach), _moved(piece.end, start, end, reach))
                piece.end = start
                pieces.insert(hit[0] + 1, done)
        for piece in pieces:
            if piece is not done:
                piece.edit(start, end, reach)
        return False

    def found(self, start: Point, text: str, where: tuple[int, int] | None, units: Units) -> None:
        """After an edit at ``start`` that replaced it all with ``text``: ``where`` it is in it."""
        if where is None:
            self.pieces = [AcceptedRange(start, start)]  # gone
            return
        index, length = where
        first = advance(start, extent(text[:index], units))
        self.pieces = [
            AcceptedRange(first, advance(first, extent(text[index : index + length], units)))
        ]


def locate(accepted: str, text: str, near_line: int) -> tuple[int, int] | None:
    """Where ``accepted`` is in ``text`` (index, length), looked for near line ``near_line``.

    An exact occurrence, the nearest to ``near_line``; else the window of as
    many lines as ``accepted`` spans that keeps the most of it, when that is
    at least ``LOCATE_SHARE`` of it; else None (it is gone). Only the lines
    within ``LOCATE_LINES`` of ``near_line`` are read, each window cut to
    ``measured_length``: the cost is bounded by the accepted text, not by
    the size of the replacement.
    """
    if not accepted:
        return None
    span = accepted.count("\n") + 1
    low = max(0, near_line - LOCATE_LINES)
    high = near_line + LOCATE_LINES + span
    starts = _line_starts(text, low, high + 1)
    if not starts:
        return None
    region_end = starts[-1] if len(starts) > high - low + 1 else len(text)
    best: tuple[int, int] | None = None
    index = text.find(accepted, starts[0], region_end)
    while index >= 0:
        line = low + bisect_right(starts, index) - 1
        if best is None or abs(line - near_line) < abs(best[1] - near_line):
            best = (index, line)
        index = text.find(accepted, index + 1, region_end)
    if best is not None:
        return best[0], len(accepted)
    bound = measured_length(accepted)
    found: tuple[int, int] | None = None
    most = 0
    # the nearest lines first: of two windows that keep as much, the nearer one
    for n in sorted(range(len(starts)), key=lambda n: abs(low + n - near_line)):
        first = starts[n]
        last = starts[n + span] - 1 if n + span < len(starts) else region_end
        last = min(max(first, last), first + bound)
        kept = kept_chars(accepted, text[first:last])
        if kept > most:
            most, found = kept, (first, last - first)
    return found if most >= LOCATE_SHARE * len(accepted) else None


def _line_starts(text: str, low: int, high: int) -> list[int]:
    """The offsets in ``text`` of lines ``low`` to ``high`` (those that exist)."""
    starts: list[int] = []
    line, offset = 0, 0
    while line <= high:
        if line >= low:
            starts.append(offset)
        found = text.find("\n", offset)
        if found < 0:
            break
        offset, line = found + 1, line + 1
    return starts


def measured_length(accepted: str) -> int:
    """How much of a range's current text ``kept_chars`` needs for ``accepted``."""
    return MEASURED_SLACK * len(accepted) + MEASURED_EXTRA


def common_ends(a: str, b: str) -> tuple[int, int]:
    """The lengths of the longest common prefix and then suffix of ``a`` and ``b`` (no overlap)."""
    head = 0
    limit = min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    limit -= head
    while tail < limit and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


def kept_chars(accepted: str, now: str) -> int:
    """How many characters of ``accepted`` are still in ``now``, in order (their LCS)."""
    if not accepted or not now:
        return 0
    if accepted == now:
        return len(accepted)
    head, tail = common_ends(accepted, now)
    a = accepted[head : len(accepted) - tail]
    b = now[head : len(now) - tail]
    if not a or not b:
        return head + tail
    masks: dict[str, int] = {}
    for i, ch in enumerate(a):
        masks[ch] = masks.get(ch, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for ch in b:
        u = v & masks.get(ch, 0)
        if u:
            v = ((v + u) | (v - u)) & full
    # each zero bit of v is one character of the common subsequence
    return head + tail + len(a) - v.bit_count()

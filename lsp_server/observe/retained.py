"""Accepted text followed through later edits, and how much of it is still there.

An accepted suggestion occupies a range of the document. ``AcceptedRange``
keeps that range current edit by edit, in the document's own position units
(``(line, character)``, UTF-16 code units unless the client negotiated
otherwise), at a constant cost per edit:

* an edit before the range, or an insertion exactly at its start, moves it
  (an edit within one earlier line that adds or removes no line break
  changes nothing here, and costs only that check);
* an edit after it, or an insertion exactly at its end, leaves it alone (so
  typing on after an accepted line is not counted as part of it);
* an edit inside it, or overlapping it, changes its extent: text the edit
  inserts there counts as part of the range, text it deletes is gone.

``kept_chars`` then compares what the range holds now with the accepted
text: the accepted characters still there, in order, i.e. the longest common
subsequence of the two (the insert/delete edit distance is
``len(accepted) + len(now) - 2 * kept``). It is computed bit-parallel
(Allison and Dix, 1986; Crochemore et al., 2001): one pass over the current
text with the accepted text as the bits of one integer, after stripping what
the two share at both ends, and the current text is cut to a bound
(``MEASURED_SLACK``) so a huge paste into an accepted range costs no more
than a few times the accepted text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

#: a document position: (line, character) in the document's position units
Point = tuple[int, int]
#: the length of a text in the document's position units (UTF-16 code units by default)
Units = Callable[[str], int]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")

#: the current text of a range is read up to this many times the accepted
#: text's length (plus ``MEASURED_EXTRA`` characters); the rest cannot add to
#: what was kept and only costs time
MEASURED_SLACK = 4
MEASURED_EXTRA = 256


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
    now = now[: measured_length(accepted)]
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

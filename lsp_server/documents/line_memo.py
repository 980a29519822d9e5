"""What a document remembers about the line the syntax context last read.

While the user types on one line, the text before the line does not change,
and some of what a keystroke's syntax context reads there is the same as the
keystroke before. A ``LineMemo`` on each ``Document`` keeps those readings,
each with the bytes it was read from; a reading is reused only while those
bytes are byte-for-byte unchanged (compared in place, not copied), so a
memo can save work but never change a context:

* ``line_scope``: where the scope of the text before the line starts, and
  the first lines of the scopes around it, kept through error recovery
  (``lsp_server.documents.line_context``);
* ``suffix_end``: where the suffix window stopped (same module).

A forked document starts with an empty memo.
"""

from __future__ import annotations

from dataclasses import dataclass

#: where each scope head's line starts, and its bytes then (with the line end when read)
HeadLines = tuple[tuple[int, bytes], ...]


@dataclass(frozen=True, slots=True)
class LineScope:
    """Where the scope of a line's preceding text starts, and the text it was found for."""

    line_start: int
    window: int
    #: ``data[window:line_start]`` then: the memo holds while it is unchanged
    before: bytes
    scope_start: int
    #: the first lines of the scopes around it (``line_context.LineText.scope_heads``)
    scope_heads: str
    #: where those lines are: the memo also holds only while they are unchanged
    head_lines: HeadLines
    #: found on a tree without errors around the line (else the first guess)
    clean: bool


@dataclass(frozen=True, slots=True)
class SuffixEnd:
    """Where the suffix window of a line stopped, and the text around the line then."""

    line_start: int
    before: bytes
    after: bytes
    #: the line's indentation (it decides Python's scope)
    indent: bytes
    #: ``len(data) - end``: typing on the line does not move it
    from_end: int


class LineMemo:
    """One document's readings of the line last asked about (None: nothing read yet)."""

    __slots__ = ("line_scope", "suffix_end")

    def __init__(self) -> None:
        self.line_scope: LineScope | None = None
        self.suffix_end: SuffixEnd | None = None

    def __repr__(self) -> str:
        held = [name for name in self.__slots__ if getattr(self, name) is not None]
        return f"LineMemo({', '.join(held) or 'empty'})"

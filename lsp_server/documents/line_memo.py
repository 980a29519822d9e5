"""What a document remembers about the line the syntax context last read.

While the user types on one line, the text before the line does not change,
and some of what a keystroke's syntax context reads there is the same as the
keystroke before. A ``LineMemo`` on each ``Document`` keeps those readings:

* ``line_scope``: where the scope of the text before the line starts, and
  the first lines of the scopes around it, kept through error recovery
  (``lsp_server.documents.line_context``);
* ``suffix_end``: where the suffix window stopped (same module);
* ``context``: the last syntax context itself, with the cursor and windows
  it was taken at (``lsp_server.documents.syntax.completion_context``): an
  editor asks again where nothing moved (a repeated request, the cursor
  back where it was), and that context is the one already taken.

A reading holds while the text it was read from is unchanged, and the
document tells its memo about every edit (``note_edit``) instead of the
memo comparing that text again on each keystroke: a byte-for-byte check
of the kilobytes around the line cost more than the reading it saved,
because a keystroke's parse has pushed them out of the processor's caches
by the time the next context looks. So:

* ``line_scope`` depends on the text before its line: any edit that starts
  before the line drops it; edits on or after the line keep it.
* ``suffix_end`` depends on the text before and after its line: an edit
  within the line's text (no line break made) keeps it and moves its line
  end; any other edit drops it.

* ``context`` depends on all of the text and its tree: any edit drops it,
  and it is used only for the same tree, cursor and windows.

A dropped reading is read afresh, so the memo can save work but never keep
a reading of text that changed. A whole-text change drops them all; a
forked document starts with an empty memo.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple


class LineText(NamedTuple):
    """The text before a line, as keys and anchors use it."""

    #: scope-local text before the line (the last ``scope_chars`` characters)
    context: str
    #: the first line of each enclosing scope, outermost first, NUL-separated
    scope_heads: str
    #: byte ranges left out of ``context`` (the bodies of finished definitions
    #: while error recovery reshapes the tree; see ``line_context``)
    elided: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class LineScope:
    """The scope-local text before a line and its scope heads, as last read."""

    line_start: int
    #: the characters of text kept (``scope_chars``)
    scope_chars: int
    text: LineText
    #: found on a tree without errors around the line (else the first guess)
    clean: bool


@dataclass(slots=True)
class SuffixEnd:
    """Where the suffix window of a line stopped, and the line it was found for."""

    line_start: int
    #: the end of the line's text, kept current while the user types on it
    line_end: int
    #: the line's indentation (it decides Python's scope)
    indent: bytes
    #: ``len(data) - end``: typing on the line does not move it
    from_end: int


class LastContext(NamedTuple):
    """The syntax context last taken, and what it was taken at."""

    line: int
    character: int
    #: the document's tree then (a re-parse without an edit makes a new one)
    tree: Any
    #: the ``ContextWindows`` it read
    windows: Any
    #: the ``SyntaxContext``
    context: Any


class LineMemo:
    """One document's readings of the line last asked about (None: nothing read yet)."""

    __slots__ = ("context", "line_scope", "suffix_end")

    def __init__(self) -> None:
        self.line_scope: LineScope | None = None
        self.suffix_end: SuffixEnd | None = None
        self.context: LastContext | None = None

    def __repr__(self) -> str:
        held = [name for name in self.__slots__ if getattr(self, name) is not None]
        return f"LineMemo({', '.join(held) or 'empty'})"

    def note_edit(self, start: int, old_end: int, new_end: int, line_break: bool) -> None:
        """Bytes ``[start, old_end)`` became ``[start, new_end)``; ``line_break``: one was typed."""
        self.context = None
        scope = self.line_scope
        if scope is not None and start < scope.line_start:
            self.line_scope = None
        end = self.suffix_end
        if end is not None:
            if line_break or start < end.line_start or old_end > end.line_end:
                self.suffix_end = None
            else:
                end.line_end += new_end - old_end

    def clear(self) -> None:
        """Forget every reading (the whole text changed)."""
        self.line_scope = None
        self.suffix_end = None
        self.context = None

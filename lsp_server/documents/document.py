"""An open document: its text and tree-sitter tree, kept current edit by edit.

``Document.apply_changes`` receives the changes of one ``didChange``. An
incremental change edits the UTF-8 text in place (``TextBuffer``), tells the
old tree what moved (``tree.edit``) and re-parses with the old tree, so
tree-sitter reuses everything the edit did not touch; a whole-document change
replaces the text and parses from scratch. All changes of one ``didChange``
are applied to the text and the tree first, and parsed once.

A document is parsed only when a grammar is registered for it, its size is at
most ``max_parse_bytes`` and it contains no NUL byte (tree-sitter reads NUL as
end of input). Otherwise ``tree`` is None and ``parse_skipped`` says why
("no grammar", "grammar not installed", "too large", "binary", "parse
timed out"); the text stays current and every position helper still works,
so completions fall back to a text-only context.

Every parse has a deadline (``bounded_parse``). Some grammars loop forever on
some unfinished text (tree-sitter-typescript 0.23.2's TSX grammar does on
``n";/"{({x:d:c f() ``, tree-sitter-typescript#323), and a parse runs on the
event loop: unbounded, it would freeze the server. A parse past its deadline
is cancelled and the document is served text-only for the next
``PARSE_RETRY_EDITS`` edits (twice as many after each further time-out), then
parsed afresh.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable, Sequence

from lsprotocol.types import (
    Position,
    PositionEncodingKind,
    TextDocumentContentChangeEvent,
    TextDocumentContentChangePartial,
)
from tree_sitter import Parser, Tree

from lsp_server.documents.languages import GrammarMissingError, LanguageSpec
from lsp_server.documents.languages.indentation import INDENT_SAMPLE_LINES, TEXT_INDENT, indent_unit
from lsp_server.documents.line_memo import LineMemo
from lsp_server.documents.positions import (
    PositionLike,
    ResolvedPosition,
    TextBuffer,
    decode_text,
    encode_text,
)

logger = logging.getLogger(__name__)

DEFAULT_MAX_PARSE_BYTES = 2_000_000
#: CPU seconds a parse may take, plus ``PARSE_DEADLINE_PER_MB`` per megabyte of
#: text, before it is cancelled: far above a real parse (about 7 MB/s of CPU
#: from scratch on a busy machine, 0.3 MB/s on random punctuation)
PARSE_DEADLINE_SECONDS = 0.5
PARSE_DEADLINE_PER_MB = 2.0
#: edits served text-only after a cancelled parse, before the next attempt
PARSE_RETRY_EDITS = 64
#: at most this many after repeated time-outs
PARSE_RETRY_EDITS_MAX = 4096
#: bytes handed to the parser by a parse's first read; a parse that asks
#: again is one that walks the file (a keystroke in JavaScript does: its
#: grammar re-lexes a token at every top-level statement), and gets the rest
#: of the text, up to ``_READ_CHUNK_MAX`` per read. So a keystroke in
#: TypeScript, Go or Rust reads once, 4 KB around the edit, and one in
#: JavaScript about three times instead of once per doubled chunk: each read
#: is a call from C into Python, which costs more than copying the bytes
_READ_CHUNK = 4096
_READ_CHUNK_MAX = 1 << 20
#: progress callbacks per look at the clock: tree-sitter calls back every
#: hundred or so parse operations, so the deadline is checked every few
#: thousand (well under a millisecond), and a keystroke's parse, which calls
#: back 5 to 25 times, never makes the system call that reads a thread's CPU clock
_CLOCK_EVERY = 64
#: languages whose missing grammar was already reported (once per process)
_missing_reported: set[str] = set()


def parser_for(spec: LanguageSpec | None) -> Parser | None:
    """A new parser for ``spec``; None without a spec or when its grammar is not installed."""
    if spec is None:
        return None
    try:
        return spec.new_parser()
    except GrammarMissingError as exc:
        if spec.name not in _missing_reported:
            _missing_reported.add(spec.name)
            logger.warning("%s; %s files get a text-only context", exc, spec.name)
        return None


class _ScratchBuffer(threading.local):
    """Reusable read buffers per thread, for ``_DeadlineInput.read``.

    py-tree-sitter 0.25-0.26 keeps one reference to every object a read
    callback returns (it never releases the callback's result), so returning a
    fresh slice per read keeps a document's size of memory alive per parse.
    Returning the same long-lived buffers every time leaks only reference
    counts. tree-sitter reads the returned bytes only until its next read, and
    the binding lets go of the buffer before that next call, so it can be
    refilled then. A parse's first read and its later ones have a buffer
    each, so neither is resized back and forth on every keystroke.
    """

    def __init__(self) -> None:
        self.first = bytearray()
        self.rest = bytearray()


_scratch = _ScratchBuffer()


class _DeadlineInput:
    """The text as tree-sitter's read callback, and the deadline as its progress callback.

    The tree keeps the read callback as its source: ``Node.text`` calls it
    after the parse, and gets fresh ``bytes`` then (py-tree-sitter 0.26's
    ``Node.text`` reads only ``bytes``, and releases them).
    """

    __slots__ = (
        "budget", "chunk", "clock", "countdown", "data", "deadline", "expired", "parsing",
    )

    def __init__(
        self, data: bytes | bytearray, budget: float, clock: Callable[[], float]
    ) -> None:
        self.data = data
        self.budget = budget
        self.clock = clock
        #: set at the first look at the clock, ``_CLOCK_EVERY`` progress calls
        #: in (a few hundred parse operations): a keystroke's parse, which
        #: calls back about ten times, never reads the clock
        self.deadline: float | None = None
        self.countdown = _CLOCK_EVERY
        self.chunk = _READ_CHUNK
        self.expired = False
        self.parsing = True

    def read(self, offset: int, _point: object) -> bytes | bytearray:
        """The text from ``offset`` on (one chunk); empty at the end or past the deadline."""
        if not self.parsing:
            # Node.text keeps asking until it has the node's bytes: a node of an
            # older, longer text gets NUL padding instead of an endless loop
            return bytes(self.data[offset : offset + _READ_CHUNK]) or b"\0"
        if self.expired:
            return b""
        end = offset + self.chunk
        if self.chunk == _READ_CHUNK:
            scratch = _scratch.first
            self.chunk = _READ_CHUNK_MAX
        else:
            scratch = _scratch.rest
        try:
            scratch[:] = memoryview(self.data)[offset:end]  # one copy
        except BufferError:  # still held: a binding that lets go later than 0.26 does
            return bytes(self.data[offset:end])
        return scratch

    def progress(self, _offset: int, _has_error: bool) -> bool:
        """True (cancel the parse) once the deadline has passed. Must never raise."""
        self.countdown -= 1
        if self.countdown:
            return False
        self.countdown = _CLOCK_EVERY
        now = self.clock()
        if self.deadline is None:
            self.deadline = now + self.budget
        elif now > self.deadline:
            self.expired = True
        return self.expired


def parse_deadline(size: int) -> float:
    """The CPU seconds a parse of ``size`` bytes may take."""
    return PARSE_DEADLINE_SECONDS + PARSE_DEADLINE_PER_MB * size / 1e6


def bounded_parse(
    parser: Parser,
    data: bytes | bytearray,
    old: Tree | None = None,
    *,
    deadline_seconds: float | None = None,
    clock: Callable[[], float] = time.thread_time,
) -> Tree | None:
    """Parse ``data`` (reusing ``old``), or None when that took over ``deadline_seconds``.

    The deadline defaults to ``parse_deadline(len(data))`` and is measured on
    ``clock``, this thread's CPU time by default (a busy machine does not make
    a real parse time out; a grammar caught in a loop burns CPU), from
    tree-sitter's ``_CLOCK_EVERY``-th progress call (it calls back every
    hundred or so operations), and the clock is read every ``_CLOCK_EVERY``
    calls from then on. tree-sitter
    stops when the callback answers True; the parser is reset then, ready for
    the next parse.
    """
    if deadline_seconds is None:
        deadline_seconds = parse_deadline(len(data))
    source = _DeadlineInput(data, deadline_seconds, clock)
    try:
        if old is None:
            tree = parser.parse(source.read, progress_callback=source.progress)
        else:
            tree = parser.parse(source.read, old, progress_callback=source.progress)
    except ValueError:
        # a cancelled parse returns no tree, which the binding reports as
        # ValueError("Parsing failed")
        if not source.expired:
            parser.reset()
            raise
        tree = None
    except BaseException:
        parser.reset()  # a parse stopped half-way would otherwise resume next time
        raise
    finally:
        source.parsing = False
    if source.expired:
        parser.reset()
        return None
    return tree


class Document:
    """One open text document: text, version, language and (when parsed) its tree."""

    def __init__(
        self,
        uri: str,
        language_id: str,
        version: int,
        text: str,
        *,
        spec: LanguageSpec | None = None,
        encoding: PositionEncodingKind = PositionEncodingKind.Utf16,
        max_parse_bytes: int = DEFAULT_MAX_PARSE_BYTES,
    ) -> None:
        self.uri = uri
        self.language_id = language_id
        self.version = version
        self.spec = spec
        self.encoding = encoding
        self.max_parse_bytes = max_parse_bytes
        self.buffer = TextBuffer(encode_text(text))
        self.tree: Tree | None = None
        #: why there is no tree: "no grammar", "grammar not installed", "too large",
        #: "binary" or "parse timed out"; None when parsed
        self.parse_skipped: str | None = None
        self._parser: Parser | None = parser_for(spec)
        #: edits left to serve text-only after a parse ran past its deadline,
        #: and how many the next time-out sets
        self._parse_backoff = 0
        self._next_backoff = PARSE_RETRY_EDITS
        self._text: str | None = text
        #: first line of the prompt's prefix window, remembered between
        #: requests by ``lsp_server.documents.prompt_window`` so that it stays put
        self.prompt_anchor: int | None = None
        #: changes applied since the document was opened: a reading of the text
        #: taken earlier (``lsp_server.documents.prompt_window.DeferredPrompt``)
        #: knows from it whether the text is still the one it was taken from
        self.edits = 0
        #: what the syntax context read around the line it was last asked
        #: about (``lsp_server.documents.line_memo``)
        self.line_memo = LineMemo()
        #: the text holds a NUL byte (binary): kept current per edit, so a
        #: keystroke never scans the whole buffer for one
        self._has_nul = b"\0" in self.buffer.data
        self._recheck_nul = False
        self._parse(incremental=False)

    def __repr__(self) -> str:
        state = "parsed" if self.tree is not None else f"unparsed: {self.parse_skipped}"
        return f"Document({self.uri!r}, v{self.version}, {len(self.buffer)} bytes, {state})"

    # -- reading ------------------------------------------------------------

    @property
    def language(self) -> str:
        """The canonical language name (the grammar's, else the client's languageId)."""
        return self.spec.name if self.spec is not None else self.language_id

    @property
    def data(self) -> bytearray:
        """The UTF-8 text. Read it, never write it: edits go through ``apply_changes``."""
        return self.buffer.data

    @property
    def text(self) -> str:
        """The whole text (decoded on first use after an edit)."""
        if self._text is None:
            self._text = decode_text(self.buffer.data)
        return self._text

    @property
    def line_count(self) -> int:
        """Number of lines, as LSP counts them."""
        return self.buffer.line_count

    def resolve(self, position: PositionLike) -> ResolvedPosition:
        """The byte offset of ``position``, with the clamped line/character."""
        return self.buffer.resolve(position.line, position.character, self.encoding)

    def offset_at(self, position: PositionLike) -> int:
        """Byte offset of an LSP position (clamped, never raises)."""
        return self.resolve(position).offset

    def position_at(self, offset: int) -> Position:
        """LSP position of a byte offset in the negotiated encoding."""
        line, character = self.buffer.position_of(offset, self.encoding)
        return Position(line=line, character=character)

    def line_text(self, line: int) -> str:
        """A line's text without its terminator ("" past the end)."""
        if not 0 <= line < self.buffer.line_count:
            return ""
        buf = self.buffer
        return decode_text(self.byte_range(buf.line_start(line), buf.line_end(line)))

    def indent_unit(self, line: int) -> str:
        """The indentation step the text shows up to ``line`` (reads a bounded window)."""
        default = self.spec.indent if self.spec is not None else TEXT_INDENT
        first = max(0, line - INDENT_SAMPLE_LINES)
        return indent_unit((self.line_text(n) for n in range(first, line + 1)), default)

    def byte_range(self, start: int, end: int) -> bytes:
        """The bytes ``[start, end)``, clamped into the text."""
        n = len(self.buffer)
        return bytes(self.buffer.data[max(0, min(start, n)) : max(0, min(end, n))])

    def text_range(self, start: int, end: int) -> str:
        """The text between two byte offsets (cut characters become U+FFFD)."""
        return decode_text(self.byte_range(start, end))

    def fork(self) -> Document:
        """An independent copy (text, line index, tree) to try an edit on.

        Used to look at a hypothetical state (the document after accepting a
        suggestion) without touching the real one; the copied tree lets that
        edit be parsed incrementally.
        """
        twin = copy.copy(self)
        twin.buffer = copy.deepcopy(self.buffer)
        twin.tree = self.tree.copy() if self.tree is not None else None
        twin._parser = parser_for(self.spec)
        twin.line_memo = LineMemo()
        return twin

    # -- editing ------------------------------------------------------------

    def apply_changes(self, changes: Sequence[TextDocumentContentChangeEvent]) -> None:
        """Apply LSP content changes in order, then re-parse once."""
        full = False
        for change in changes:
            if isinstance(change, TextDocumentContentChangePartial):
                self._apply_range(change)
            else:
                self.buffer.set_text(encode_text(change.text))
                self._has_nul = b"\0" in self.buffer.data
                self.line_memo.clear()
                self.tree, full = None, True
        self._text = None
        self.edits += 1
        self._parse(incremental=not full)

    def replace_text(self, text: str) -> None:
        """Replace the whole text and parse it from scratch."""
        self.line_memo.clear()
        self.buffer.set_text(encode_text(text))
        self._has_nul = b"\0" in self.buffer.data
        self._text = text
        self.edits += 1
        self._parse(incremental=False)

    def reconsider_parse(self) -> None:
        """Re-check the parse limits (after ``max_parse_bytes`` changed)."""
        if self.tree is None or len(self.buffer) > self.max_parse_bytes:
            self._parse(incremental=False)

    def _apply_range(self, change: TextDocumentContentChangePartial) -> None:
        buf = self.buffer
        first, last = change.range.start, change.range.end
        start = self.resolve(first).offset
        # typing sends an empty range: one position to resolve, not two (compared
        # field by field: the attrs equality is several times slower)
        same = last.line == first.line and last.character == first.character
        end = start if same else self.resolve(last).offset
        if end < start:
            start, end = end, start
        new = encode_text(change.text)
        if b"\0" in new:
            self._has_nul = True
        elif self._has_nul and end > start:
            # a deletion may have removed the last NUL: look again (rare)
            self._recheck_nul = True
        new_end = start + len(new)
        line_break = b"\n" in new or b"\r" in new
        self.line_memo.note_edit(start, end, new_end, line_break)
        if self.tree is None:
            buf.replace(start, end, new)
            return
        start_point = buf.ts_point(start)
        old_end_point = start_point if end == start else buf.ts_point(end)
        buf.replace(start, end, new)
        if b"\n" in new:
            new_end_point = buf.ts_point(new_end)
        else:
            # no row break inserted: the new end is on the start's row
            new_end_point = (start_point[0], start_point[1] + len(new))
        self.tree.edit(start, end, new_end, start_point, old_end_point, new_end_point)

    def _nul_present(self) -> bool:
        if self._recheck_nul:
            self._recheck_nul = False
            self._has_nul = b"\0" in self.buffer.data
        return self._has_nul

    def _parse(self, *, incremental: bool) -> None:
        data = self.buffer.data
        reason: str | None = None
        if self._parser is None:
            reason = "no grammar" if self.spec is None else "grammar not installed"
        elif len(data) > self.max_parse_bytes:
            reason = "too large"
        elif self._nul_present():
            reason = "binary"
        elif self._parse_backoff > 0:
            self._parse_backoff -= 1
            reason = "parse timed out"
        if reason is not None or self._parser is None:
            if reason != self.parse_skipped:
                logger.info("not parsing %s: %s (%d bytes)", self.uri, reason, len(data))
            self.tree, self.parse_skipped = None, reason
            return
        old = self.tree if incremental else None
        tree = bounded_parse(self._parser, data, old)
        if tree is None:
            logger.warning(
                "parsing %s took over %.1f s of CPU (the %s grammar seems stuck on this "
                "text): text-only context for the next %d edits",
                self.uri, parse_deadline(len(data)), self.language, self._next_backoff,
            )
            self._parse_backoff = self._next_backoff
            self._next_backoff = min(2 * self._next_backoff, PARSE_RETRY_EDITS_MAX)
            self.tree, self.parse_skipped = None, "parse timed out"
            return
        self.tree = tree
        self._next_backoff = PARSE_RETRY_EDITS
        self.parse_skipped = None

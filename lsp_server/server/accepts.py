"""The server's acceptance ledger, on its documents and its event loop.

``AcceptWatch`` joins ``lsp_server.observe.acceptance.AcceptanceLedger`` to
the server: suggestions that go out (``shown``), accepts the editor reports
(``accept``, from ``scopecache.accepted``), the ``didChange`` and
``didClose`` of documents with accepted text, and one event-loop timer set
to the ledger's next due count. The ledger reads the text of an accepted
range from the open ``Document`` in the negotiated position encoding.

On the keystroke path: ``text_before`` and ``changed`` cost one dictionary
lookup for a document with neither a suggestion shown nor accepted text;
with some, a constant per followed accept (``FollowedText.edit``) and never
a read of the text (a whole-document change, rare, is the exception: it is
compared with the text before it, and an edit that replaces an accepted
text whole is searched for it near where it was).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

from lsprotocol import types

from lsp_server.documents.document import Document
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import SyntaxContext
from lsp_server.observe.acceptance import (
    AcceptanceLedger,
    AcceptOutcome,
    Attribution,
    ShownSuggestion,
)
from lsp_server.observe.retained import Point, Units, utf16_units
from lsp_server.settings import AcceptanceSettings

logger = logging.getLogger(__name__)

#: what a ``SyntaxContext`` without scopes (text only) counts as
TEXT_SCOPE = "text"
#: bytes read per character of a range's bound: UTF-8 needs at most four
_BYTES_PER_CHAR = 4


def scope_kind(ctx: SyntaxContext) -> str:
    """The kind of the innermost scope at the cursor (its node type), ``text`` without a tree."""
    return ctx.scope_chain[-1] if ctx.scope_chain else TEXT_SCOPE


def units_for(encoding: types.PositionEncodingKind | str) -> Units:
    """How a position encoding measures text: UTF-16 code units, UTF-8 bytes or code points."""
    if encoding == types.PositionEncodingKind.Utf8:
        return lambda text: len(text.encode("utf-8", "surrogatepass"))
    if encoding == types.PositionEncodingKind.Utf32:
        return len
    return utf16_units


class AcceptWatch:
    """Suggestions shown and accepted in this server, and what became of the accepted text."""

    def __init__(
        self,
        documents: DocumentStore,
        settings: AcceptanceSettings | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._documents = documents
        self._clock = clock
        self._encoding = documents.position_encoding
        settings = settings or AcceptanceSettings()
        self.ledger = AcceptanceLedger(
            self._read,
            clock=clock,
            units=units_for(self._encoding),
            short_window=settings.short_window_seconds,
            long_window=settings.long_window_seconds,
            mute_below=settings.mute_below,
            mute_over=settings.mute_over,
        )
        self._timer: asyncio.TimerHandle | None = None
        self._timer_due: float | None = None

    def __repr__(self) -> str:
        return f"AcceptWatch({self.ledger!r}, timer={'set' if self._timer else 'none'})"

    def configure(self, settings: AcceptanceSettings) -> None:
        """Apply the ``acceptance`` settings (windows apply to accepts from now on)."""
        self.ledger.configure(
            short_window=settings.short_window_seconds,
            long_window=settings.long_window_seconds,
            mute_below=settings.mute_below,
            mute_over=settings.mute_over,
        )

    # -- suggestions ------------------------------------------------------------------------

    def shown(
        self, item_id: str, uri: str, ctx: SyntaxContext, text: str, source: str, latency_ms: float
    ) -> None:
        """A suggestion went out at the context's cursor."""
        attribution = Attribution(source, ctx.language, scope_kind(ctx))
        self.ledger.shown(
            ShownSuggestion(item_id, uri, ctx.line, ctx.character, text, attribution, latency_ms)
        )

    def accept(self, item_id: str, length: int | None, kind: str) -> AcceptOutcome | None:
        """The editor accepted ``item_id`` (up to ``length`` UTF-16 code units; None: all)."""
        self._sync_units()
        outcome = self.ledger.accept(item_id, length, kind)
        if outcome is not None and outcome.chars:
            self._schedule()
        return outcome

    # -- documents --------------------------------------------------------------------------

    def text_before(
        self, uri: str, changes: Sequence[types.TextDocumentContentChangeEvent]
    ) -> str | None:
        """The text before a ``didChange`` that replaces a followed document whole, else None."""
        if not self.ledger.expecting(uri):
            return None
        if all(isinstance(c, types.TextDocumentContentChangePartial) for c in changes):
            return None
        doc = self._documents.get(uri)
        return doc.text if doc is not None else None

    def changed(
        self,
        uri: str,
        changes: Sequence[types.TextDocumentContentChangeEvent],
        before: str | None = None,
    ) -> None:
        """Follow a ``didChange`` (``before``: what ``text_before`` returned for it)."""
        if not self.ledger.expecting(uri):
            return
        self._sync_units()
        if before is not None:
            doc = self._documents.get(uri)
            if doc is not None:
                self.ledger.replaced(uri, before, doc.text)
            return
        for change in changes:
            if isinstance(change, types.TextDocumentContentChangePartial):
                start, end = change.range.start, change.range.end
                self.ledger.edit(
                    uri, (start.line, start.character), (end.line, end.character), change.text
                )

    def closed(self, uri: str) -> None:
        """``uri`` is closing (still open): count its accepted text as it is now."""
        if self.ledger.watching(uri):
            self.ledger.closed(uri)

    def _sync_units(self) -> None:
        encoding = self._documents.position_encoding
        if encoding != self._encoding:
            self._encoding = encoding
            self.ledger.units = units_for(encoding)

    def _read(self, uri: str, start: Point, end: Point, limit: int) -> str | None:
        doc: Document | None = self._documents.get(uri)
        if doc is None:
            return None
        first = doc.resolve(types.Position(line=start[0], character=start[1])).offset
        last = doc.resolve(types.Position(line=end[0], character=end[1])).offset
        last = min(max(first, last), first + _BYTES_PER_CHAR * limit)
        return doc.text_range(first, last)[:limit]

    # -- the timer --------------------------------------------------------------------------

    def _schedule(self) -> None:
        due = self.ledger.due()
        if due is None:
            return
        if self._timer is not None and self._timer_due is not None and self._timer_due <= due:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (a test driving the ledger itself): counted when asked
        if self._timer is not None:
            self._timer.cancel()
        self._timer_due = due
        self._timer = loop.call_later(max(0.0, due - self._clock()), self._fire)

    def _fire(self) -> None:
        self._timer, self._timer_due = None, None
        try:
            self.ledger.measure_due()
        except Exception:  # a measurement must never take the server down
            logger.exception("counting retained characters failed")
        self._schedule()

    def close(self) -> None:
        """Cancel the timer (shutdown)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer, self._timer_due = None, None

"""Speculative prefetch: fetch the next line's suggestion before the user gets there.

A reactive cache cannot answer the start of a new line: nobody has asked
there yet. When a suggestion is shown at the end of a line, the state after
accepting it is predictable: the line completed, Enter pressed, the editor's
auto-indent (``lsp_server.documents.languages.indentation.next_line_indent``, by the
document's language and its own indentation step: one step in after a block
opener or an opening bracket left at the end of the line, one step out after
a block-ending statement such as Python's ``return``, else the same). The
prefetcher builds that state on a fork of the document (incremental parse of
one edit on a copied tree), derives its syntax context, and asks upstream for
it in the background, so that when the user accepts (or types the suggestion
by hand, which reaches the same state) the next suggestion is already in the
cache. A suggestion the gate cut inside its first line (the model went on,
unsure: ``Suggestion.line_cut``) does not end the line, so nothing is
fetched after it: such prefetches asked for the line after a half-written
one (``for attempt``, ``wait = retry_after_seconds(exc``) and were never
reached.

Bounded so it never costs the user: at most one speculative stream per
document, ``speculative.maxPerMinute`` in total, none while the circuit
breaker is open or the service recently asked us to slow down, and the
stream is cancelled as soon as the user's typing leaves the predicted line.

On ground another editor window has covered (the suggestion came from the
shared L2) the prefetch looks in L2 only and never asks the service. That
window was served the same suggestion in the same state: what came next for
it, its own prefetch or the request it made on the next line, is in L2 under
the same key. Nothing there means its user did not take that path (or its
prefetch was cut off when they typed something else), so asking the service
would mostly fetch an answer nobody reaches; whether the first window
speculated at all depended on its timing and its budget, not on the
session. Such a look costs the service nothing and is not counted in
``maxPerMinute``; if this user does reach the state, the request there asks
as any miss does.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable

from lsprotocol import types

from lsp_server.completion.pipeline import CompletionPipeline
from lsp_server.documents.document import Document
from lsp_server.documents.languages import LanguageSpec
from lsp_server.documents.languages.indentation import next_line_indent
from lsp_server.documents.positions import character_column, encode_text
from lsp_server.documents.syntax import SyntaxContext
from lsp_server.settings import SpeculativeSettings

logger = logging.getLogger(__name__)

#: seconds without speculation after the service said "slow down"
OVERLOAD_PAUSE = 30.0

ContextAt = Callable[[Document, types.Position], SyntaxContext]


def after_accept(
    line_prefix: str,
    suggestion: str,
    spec: LanguageSpec | None = None,
    unit: str | None = None,
) -> tuple[str, str]:
    """The inserted text for "accept, then Enter", and the new line's indentation."""
    indent = next_line_indent((line_prefix + suggestion).split("\n")[-1], spec, unit)
    return suggestion + "\n" + indent, indent


def typed_towards(
    doc: Document, ctx: SyntaxContext, text: str, context_at: ContextAt
) -> tuple[SyntaxContext, str] | None:
    """The context at the end of the line and what is left of ``text`` to type.

    None unless the line is still a prefix of the predicted line (the user
    is typing the suggestion, or accepted part of it) and nothing changed
    after it (the user has not gone on to the next line yet).
    """
    first, newline, later = text.partition("\n")
    predicted = ctx.line_prefix + first
    current = doc.line_text(ctx.line)
    if not predicted.startswith(current) or len(current) < len(ctx.line_prefix):
        return None
    end_of_line = doc.position_at(doc.buffer.line_end(ctx.line))  # in the negotiated encoding
    at_end = context_at(doc, end_of_line)
    if at_end.suffix != ctx.suffix:
        # The user has gone past the line (pressed Enter, typed on): the
        # predicted state is behind them, and a fork of today's buffer would
        # be a state nobody reaches (and a key no other window asks).
        return None
    return at_end, predicted[len(current) :] + newline + later


class SpeculativePrefetcher:
    """Decides when to speculate and starts the background request."""

    def __init__(
        self,
        settings: SpeculativeSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._started: deque[float] = deque()
        self._last: dict[str, tuple[int, str]] = {}
        self._paused_until = 0.0
        self._rate_limited_seen = 0
        self.skipped = 0

    def pause(self) -> None:
        """The service is overloaded (429/503) or failing: stop speculating for a while."""
        self._paused_until = self._clock() + OVERLOAD_PAUSE

    def note_rate_limited(self, total: int) -> None:
        """The backend's count of rate-limited answers so far: pause on a new one."""
        if total > self._rate_limited_seen:
            self._rate_limited_seen = total
            self.pause()

    def _within_budget(self) -> bool:
        now = self._clock()
        while self._started and now - self._started[0] > 60.0:
            self._started.popleft()
        return len(self._started) < self.settings.max_per_minute and now >= self._paused_until

    def after_served(
        self,
        doc: Document,
        ctx: SyntaxContext,
        suggestion: str,
        pipeline: CompletionPipeline,
        context_at: ContextAt,
        *,
        circuit: str = "closed",
        from_l2: bool = False,
    ) -> bool:
        """Maybe prefetch the state after accepting ``suggestion``; True if started.

        ``suggestion`` may be empty: the user has typed all of it already and
        the next line is still to come. ``from_l2``: the suggestion came from
        the shared tier, so the prefetch only looks there (see the module
        docstring) and is not counted against ``maxPerMinute``.
        """
        if not self.settings.enabled or ctx.line_suffix.strip():
            return False
        predicted = (ctx.line, ctx.line_prefix + suggestion.split("\n", 1)[0])
        if self._last.get(doc.uri) == predicted:
            return False  # typing through the same suggestion: already speculated
        if circuit != "closed" or pipeline.speculating(doc.uri):
            self.skipped += 1
            logger.debug("no speculation at line %d: %s", ctx.line,
                         "circuit " + circuit if circuit != "closed" else "one under way")
            return False
        ask = not from_l2
        if ask and not self._within_budget():
            self.skipped += 1
            logger.debug("no speculation at line %d: over budget or paused", ctx.line)
            return False
        self._last[doc.uri] = predicted
        unit = doc.indent_unit(ctx.line)
        inserted, indent = after_accept(ctx.line_prefix, suggestion, doc.spec, unit)
        cursor = types.Position(line=ctx.line, character=ctx.character)
        fork = doc.fork()
        fork.apply_changes(
            [
                types.TextDocumentContentChangePartial(
                    range=types.Range(start=cursor, end=cursor), text=inserted
                )
            ]
        )
        target = types.Position(
            line=ctx.line + inserted.count("\n"),
            character=character_column(encode_text(indent), doc.encoding),
        )
        next_ctx = context_at(fork, target)
        if not pipeline.prefetch(doc.uri, next_ctx, predicted=predicted, ask=ask):
            return False
        if ask:
            self._started.append(self._clock())
        where = "" if ask else " (L2 only)"
        logger.debug("speculative prefetch for %s line %d%s", doc.uri, target.line, where)
        return True

    def forget(self, uri: str) -> None:
        """Drop per-document state (document closed)."""
        self._last.pop(uri, None)

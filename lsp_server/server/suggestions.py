"""One suggestion for the completion handlers, and what follows it.

``suggest`` finds the open, not excluded document, derives the syntax
context at the cursor, records the request in the trace and asks the
pipeline; the request feeds the hybrid policy's context heat (after the
answer, when that comes from memory). An answer from memory comes back
in the same call (the inline hit path answers without a task); a miss comes
back as ``Pending``, the rest of its way (``suggest`` awaits it for callers
that simply wait). What goes out is remembered (``ServedItems``) and shown
to the acceptance ledger (``AcceptWatch``) with its source, language, scope
kind and latency, so that ``scopecache.accepted`` can attribute an
acceptance, whole or in part, and the speculative prefetch of the state
after accepting it is scheduled for just after the answer has gone out.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsp_server.completion.pending import Pending
from lsp_server.completion.pipeline import Suggestion
from lsp_server.completion.speculate import typed_towards
from lsp_server.documents.document import Document
from lsp_server.documents.exclude import is_excluded
from lsp_server.documents.positions import PositionLike
from lsp_server.documents.syntax import SyntaxContext
from lsp_server.server.served import ServedItem

if TYPE_CHECKING:
    from lsp_server.server.language_server import ScopecacheServer

logger = logging.getLogger(__name__)

#: seconds after a served suggestion before its speculative prefetch starts
SPECULATION_DELAY = 0.005


#: a suggestion with its item id and the context it was found for
Found = tuple[Suggestion, str, SyntaxContext]


def suggest_now(
    ls: ScopecacheServer,
    uri: str,
    position: PositionLike,
    *,
    automatic: bool = True,
    method: str = "inline",
) -> Found | None | Pending[Found | None]:
    """A suggestion at ``position`` with its item id, None, or ``Pending`` when it needs waiting.

    An answer from memory (an L1 hit, or nothing to show) comes back in the
    same call; a miss comes back as ``Pending`` with the rest of its way.
    ``automatic`` tells whether the editor asked by itself while the user
    typed (rather than the user invoking completion): it feeds the hybrid
    policy's context weight. ``method`` is ``inline`` or ``list``.
    """
    ls.retry_configuration()
    doc = _completable(ls, uri)
    if doc is None:
        ls.stats.requests += 1
        ls.stats.record_empty(0.0)
        return None
    try:
        return _suggest_now(ls, doc, position, automatic=automatic, method=method)
    except Exception:
        ls.stats.errors += 1  # answered with an error: counted, never silent
        raise


async def suggest(
    ls: ScopecacheServer,
    uri: str,
    position: PositionLike,
    *,
    automatic: bool = True,
    method: str = "inline",
) -> Found | None:
    """``suggest_now``, waiting for its answer when it needs waiting."""
    found = suggest_now(ls, uri, position, automatic=automatic, method=method)
    return await found.rest if isinstance(found, Pending) else found


def accepted(
    ls: ScopecacheServer, item_id: str, *, kind: str = "full", length: int | None = None
) -> bool:
    """The editor reports that the user accepted a suggestion, or part of it.

    ``kind`` is ``full``, ``word`` or ``line``; ``length`` how much of the
    suggestion's text is accepted so far, in UTF-16 code units (None: all).
    """
    item = ls.served.get(item_id)
    if item is None:
        return False
    outcome = ls.accepts.accept(item_id, length, kind)
    if outcome is None or outcome.first:
        ls.stats.accepted += 1
    if outcome is not None and ls.recorder is not None:
        ls.recorder.accept(item.uri, item_id, kind, length)
    return True


def _completable(ls: ScopecacheServer, uri: str) -> Document | None:
    """The open document at ``uri``, or None when unknown or excluded."""
    doc = ls.documents.get(uri)
    if doc is None:
        logger.debug("completion for unknown document %s", uri)
        return None
    if is_excluded(uri, ls.settings.exclude):
        return None
    return doc


def _suggest_now(
    ls: ScopecacheServer, doc: Document, position: PositionLike, *, automatic: bool, method: str
) -> Found | None | Pending[Found | None]:
    ctx = ls.doc_context(doc, position)
    uri, version = doc.uri, doc.version

    def still_current() -> bool:
        return ls.documents.get(uri) is doc and doc.version == version

    if ls.recorder is not None:
        ls.recorder.complete(uri, position, method)

    def line_done() -> None:
        # The model says this line is complete. On a service slower than the
        # typing, ask now for the next line (Enter, auto-indent), the state the
        # user reaches next, rather than after Enter.
        if ls.throttle.slow and ls.speculator.settings.enabled and ls.backend is not None:
            asyncio.get_running_loop().call_later(
                SPECULATION_DELAY, _speculate, ls, doc, version, ctx, Suggestion("", "upstream")
            )

    started = time.perf_counter()
    answer = ls.pipeline.complete_now(
        uri, ctx, still_current=still_current, method=method, line_done=line_done
    )
    if isinstance(answer, Pending):
        ls.heat.record_line(automatic=automatic, line_prefix=ctx.line_prefix)
        return Pending(_served_later(ls, doc, version, ctx, answer, started))
    # answered at once: the request's heat (nothing the answer reads) is noted after it
    return _served(ls, doc, version, ctx, answer, started, automatic=automatic)


async def _served_later(
    ls: ScopecacheServer,
    doc: Document,
    version: int,
    ctx: SyntaxContext,
    answer: Pending[Suggestion | None],
    started: float,
) -> Found | None:
    try:
        return _served(ls, doc, version, ctx, await answer.rest, started)
    except Exception:
        ls.stats.errors += 1  # answered with an error: counted, never silent
        raise


def _served(
    ls: ScopecacheServer,
    doc: Document,
    version: int,
    ctx: SyntaxContext,
    suggestion: Suggestion | None,
    started: float,
    *,
    automatic: bool | None = None,
) -> Found | None:
    """Remember what goes out, show it to the acceptance ledger, schedule its prefetch.

    ``automatic`` is the request's, when its context heat is still to be noted.
    """
    if suggestion is None:
        if automatic is not None:
            ls.heat.record_line(automatic=automatic, line_prefix=ctx.line_prefix)
        return None
    latency_ms = (time.perf_counter() - started) * 1000.0
    uri, text, source = doc.uri, suggestion.text, suggestion.source
    item_id = ls.served.remember(ServedItem(uri, ctx.line, ctx.character, text, source))
    _after_the_answer(_after_served, ls, automatic, item_id, doc, version, ctx, suggestion,
                      latency_ms)
    if ls.recorder is not None:
        ls.recorder.shown(item_id, uri, ctx, text, source, latency_ms)
    return suggestion, item_id, ctx


def _after_served(
    ls: ScopecacheServer,
    automatic: bool | None,
    item_id: str,
    doc: Document,
    version: int,
    ctx: SyntaxContext,
    suggestion: Suggestion,
    latency_ms: float,
) -> None:
    """What follows a suggestion's answer: its ledger record, heat and prefetch timer."""
    ls.accepts.shown(item_id, doc.uri, ctx, suggestion.text, suggestion.source, latency_ms)
    if automatic is not None:
        ls.heat.record_line(automatic=automatic, line_prefix=ctx.line_prefix)
    if (
        suggestion.text
        and not suggestion.line_cut  # the line goes on past it: no line after to fetch
        and ls.speculator.settings.enabled
        and ls.backend is not None
    ):
        _speculate_after(ls, doc, version, ctx, suggestion)


def _after_the_answer(callback: Callable[..., None], *args: Any) -> None:
    """Run ``callback`` once the answer being built is written, else now (no event loop).

    The loop runs it before it next waits for input, so nothing the editor
    sends after seeing the answer (an accept of it) is read first; meanwhile
    the answer is on its way.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        callback(*args)
        return
    loop.call_soon(callback, *args)


#: per document, the newest answer whose speculative prefetch waits for its timer
_waiting: weakref.WeakKeyDictionary[Document, list[Any]] = weakref.WeakKeyDictionary()


def _speculate_after(
    ls: ScopecacheServer, doc: Document, version: int, ctx: SyntaxContext, suggestion: Suggestion
) -> None:
    """Prefetch ahead of this answer ``SPECULATION_DELAY`` after it, one timer per document.

    After the answer has gone out, not before: it must not delay it. Answers
    that follow one another faster than that (typing through a suggestion
    quickly, a client asking in a loop) share the first one's timer, which
    prefetches for the newest of them: an older answer's prefetch would
    find the document moved on, and reach the same state after accepting,
    or none. A timer per answer put each answer's prefetch between the
    next requests, and every timer into the loop's heap.
    """
    waiting = _waiting.get(doc)
    if waiting is not None:
        waiting[0] = (ls, version, ctx, suggestion)
        return
    waiting = [(ls, version, ctx, suggestion)]
    _waiting[doc] = waiting
    asyncio.get_running_loop().call_later(SPECULATION_DELAY, _speculate_newest, doc, waiting)


def _speculate_newest(doc: Document, waiting: list[Any]) -> None:
    if _waiting.get(doc) is waiting:
        del _waiting[doc]
    ls, version, ctx, suggestion = waiting[0]
    _speculate(ls, doc, version, ctx, suggestion)


def _speculate(
    ls: ScopecacheServer, doc: Document, version: int, ctx: SyntaxContext, suggestion: Suggestion
) -> None:
    if ls.backend is None or ls.documents.get(doc.uri) is not doc:
        return
    if ls.store.policy_name == "none":
        return  # nothing fetched ahead could be kept
    text = suggestion.text
    if doc.version != version:
        # The user typed on since: speculate only if they typed the suggestion.
        caught_up = typed_towards(doc, ctx, text, ls.doc_context)
        if caught_up is None:
            logger.debug("no speculation at line %d: the user typed on", ctx.line)
            return
        ctx, text = caught_up
    counters = ls.backend.counters()
    ls.speculator.note_rate_limited(counters.errors_by_kind.get("rate_limited", 0))
    try:
        ls.speculator.after_served(
            doc,
            ctx,
            text,
            ls.pipeline,
            ls.doc_context,
            circuit=counters.circuit,
            from_l2=suggestion.from_l2,
        )
    except Exception:  # speculation is an optimisation: never let it hurt
        logger.exception("speculative prefetch failed")

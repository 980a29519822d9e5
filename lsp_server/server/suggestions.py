"""One suggestion for the completion handlers, and what follows it.

``suggest`` finds the open, not excluded document, derives the syntax
context at the cursor, feeds the hybrid policy's context heat, records the
request in the trace and asks the pipeline. What goes out is remembered
(``ServedItems``) so that ``scopecache.accepted`` can attribute an
acceptance, and the speculative prefetch of the state after accepting it
is scheduled for just after the answer has gone out.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from cache.heat import line_entropy
from lsp_server.completion.pipeline import Suggestion
from lsp_server.completion.speculate import typed_towards
from lsp_server.documents.document import Document
from lsp_server.documents.exclude import is_excluded
from lsp_server.documents.syntax import SyntaxContext
from lsp_server.server.served import ServedItem

if TYPE_CHECKING:
    from lsp_server.server.language_server import ScopecacheServer

logger = logging.getLogger(__name__)

#: seconds after a served suggestion before its speculative prefetch starts
SPECULATION_DELAY = 0.005


async def suggest(
    ls: ScopecacheServer,
    uri: str,
    position: types.Position,
    *,
    automatic: bool = True,
    method: str = "inline",
) -> tuple[Suggestion, str, SyntaxContext] | None:
    """A suggestion at ``position`` with its item id, or None.

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
        return await _suggest(ls, doc, position, automatic=automatic, method=method)
    except Exception:
        ls.stats.errors += 1  # answered with an error: counted, never silent
        raise


def accepted(ls: ScopecacheServer, item_id: str) -> bool:
    """The editor reports that the user accepted a suggestion."""
    item = ls.served.get(item_id)
    if item is None:
        return False
    ls.stats.accepted += 1
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


async def _suggest(
    ls: ScopecacheServer, doc: Document, position: types.Position, *, automatic: bool, method: str
) -> tuple[Suggestion, str, SyntaxContext] | None:
    ctx = ls.doc_context(doc, position)
    ls.heat.record(automatic=automatic, entropy=line_entropy(ctx.line_prefix))
    uri, version = doc.uri, doc.version

    def still_current() -> bool:
        return ls.documents.get(uri) is doc and doc.version == version

    if ls.recorder is not None:
        ls.recorder.complete(uri, position, method)
    suggestion = await ls.pipeline.complete(uri, ctx, still_current=still_current, method=method)
    if suggestion is None:
        return None
    if suggestion.text and ls.speculator.settings.enabled and ls.backend is not None:
        # After the answer has gone out, not before: it must not delay it.
        asyncio.get_running_loop().call_later(
            SPECULATION_DELAY, _speculate, ls, doc, version, ctx, suggestion
        )
    item = ServedItem(uri, ctx.line, ctx.character, suggestion.text, suggestion.source)
    return suggestion, ls.served.remember(item), ctx


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

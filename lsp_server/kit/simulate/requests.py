"""The request stream ``scopecache simulate`` plays: a trace read as the server reads it.

The trace is read through the server's own ``DocumentStore`` and
``syntax_context``; keys come from the pipeline's ``keys_for``; and the
reference service's ``CorpusEngine`` over the trace's ``final`` texts stands
in for the model (``ReferenceAnswers``), asked with the prompt the server
would send, so simulate and replay agree. ``collect_requests`` turns every
``complete`` event into one ``SimRequest``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from cache.keys import fingerprint
from lsp_server.documents.document import Document
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import SyntaxContext, completion_context
from lsp_server.kit.reference.engine import CorpusEngine
from lsp_server.kit.simulate.strategies import SimRequest
from lsp_server.observe.trace.format import ChangeEvent, CompleteEvent, OpenEvent
from lsp_server.observe.trace.reader import iter_trace
from lsp_server.settings import CompletionSettings

logger = logging.getLogger(__name__)


def _change(change: Any) -> lsp.TextDocumentContentChangeEvent:
    if change.range is None:
        return lsp.TextDocumentContentChangeWholeDocument(text=change.text)
    start, end = change.range
    return lsp.TextDocumentContentChangePartial(
        range=lsp.Range(
            start=lsp.Position(line=start.line, character=start.character),
            end=lsp.Position(line=end.line, character=end.character),
        ),
        text=change.text,
    )


class ReferenceAnswers:
    """The reference engine over a trace's final texts, asked as the server asks the service.

    ``context`` derives the syntax context with the settings' prompt windows;
    ``answer`` asks the engine with the context's prefix and suffix,
    ``max_tokens`` and ``stop`` (block openers are detected by the engine),
    once per distinct prompt prefix.
    """

    def __init__(self, final: Iterable[str], completion: CompletionSettings | None = None) -> None:
        self.engine = CorpusEngine(final)
        self.completion = completion or CompletionSettings()
        self._answers: dict[tuple[int, bool], tuple[str, bool]] = {}

    def context(self, doc: Document, position: lsp.Position) -> SyntaxContext:
        """The syntax context the server derives at ``position``."""
        return completion_context(doc, position, self.completion)

    def answer(self, ctx: SyntaxContext) -> str:
        """The engine's raw answer for the prompt built from ``ctx``."""
        return self.answer_and_cut(ctx)[0]

    def answer_and_cut(self, ctx: SyntaxContext) -> tuple[str, bool]:
        """The engine's raw answer, and whether it was cut at ``max_tokens``."""
        memo = (fingerprint(ctx.prefix), ctx.block_opener)
        done = self._answers.get(memo)
        if done is None:
            c = self.completion
            answer = self.engine.complete(
                ctx.prefix, ctx.suffix, max_tokens=c.max_tokens, stop=c.stop
            )
            done = self._answers[memo] = (answer.text, answer.finish_reason == "length")
        return done


def collect_requests(
    path: str | Path,
    answers: ReferenceAnswers | None = None,
    on_event: Callable[[], None] | None = None,
    on_request: Callable[[SimRequest, Document], None] | None = None,
) -> list[SimRequest]:
    """Every completion request of a trace, with its context and the engine's answer.

    ``answers`` defaults to the engine over the trace's final texts with the
    default completion settings. ``on_request`` sees each request with its
    ``Document`` as it is then (and must leave it so).
    """
    from lsp_server.completion.pipeline import fit_to_line, keys_for

    header, events = iter_trace(path)
    if answers is None:
        answers = ReferenceAnswers(header.final.values())
    store = DocumentStore()
    versions: dict[str, int] = {}
    requests: list[SimRequest] = []
    for event, docs in events:
        if on_event is not None:
            on_event()
        if isinstance(event, OpenEvent):
            store.open(event.uri, event.language_id, 0, event.text)
            versions[event.uri] = 0
        elif isinstance(event, ChangeEvent):
            versions[event.uri] += 1
            store.change(event.uri, versions[event.uri], [_change(ch) for ch in event.changes])
        elif isinstance(event, CompleteEvent):
            doc = store.get(event.uri)
            assert doc is not None  # the reader checked the document is open
            pos = lsp.Position(line=event.position.line, character=event.position.character)
            ctx = answers.context(doc, pos)
            key, anchor = keys_for(ctx)
            raw, cut = answers.answer_and_cut(ctx)
            line = event.position.line
            before = "\n".join(docs.line(event.uri, n) for n in range(line))
            after_lines = [ctx.line_suffix] + [
                docs.line(event.uri, n) for n in range(line + 1, docs.line_count(event.uri))
            ]
            requests.append(
                SimRequest(
                    index=len(requests),
                    t=event.t,
                    uri=event.uri,
                    line=line,
                    character=event.position.character,
                    key=key,
                    anchor=anchor,
                    line_prefix=ctx.line_prefix,
                    line_suffix=ctx.line_suffix,
                    line_context=ctx.line_context,
                    before_fp=fingerprint(before),
                    after_fp=fingerprint("\n".join(after_lines)),
                    suffix_fp=key.suffix_fp,
                    expect=event.expect,
                    at_line_start=ctx.at_line_start,
                    answer_raw=raw,
                    answer=fit_to_line(raw, ctx.line_suffix),
                    answer_truncated=cut,
                )
            )
            if on_request is not None:
                on_request(requests[-1], doc)
    return requests

"""The post-accept state: what the editor asks after a suggestion is accepted.

Accepting the first line of a suggestion and pressing Enter in an
auto-indenting editor leaves the cursor at the start of a new line, indented.
``PrefetchTargets`` computes the completion request of that state on the
live document (edit, derive the syntax context and keys, undo), with the
reference engine's answer there (``requests.ReferenceAnswers``,
shared with the requests themselves), for the timed simulation's
speculative prefetch. The document is left exactly as it was.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from lsprotocol import types as lsp

from lsp_server.documents.document import Document
from lsp_server.documents.languages.indentation import next_line_indent
from lsp_server.kit.simulate.requests import ReferenceAnswers
from lsp_server.kit.simulate.strategies import SimRequest
from lsp_server.observe.trace.format import utf16_len

logger = logging.getLogger(__name__)


class PrefetchTargets:
    """Computes post-accept requests on the live document (edit, look, undo)."""

    def __init__(self, answers: ReferenceAnswers) -> None:
        self.answers = answers
        self.memo: dict[tuple[str, int, int, str], SimRequest | None] = {}

    def __call__(self, req: SimRequest, doc: Document) -> SimRequest | None:
        """The post-accept request of ``req`` (None when its answer has no first line)."""
        if not req.answer.split("\n", 1)[0].strip():
            return None
        accepted = req.line_prefix + req.answer.split("\n", 1)[0]
        memo = (req.uri, req.before_fp, req.after_fp, accepted)
        if memo not in self.memo:
            self.memo[memo] = self._target(req, doc, accepted)
        return self.memo[memo]

    def _target(self, req: SimRequest, doc: Document, accepted: str) -> SimRequest:
        from lsp_server.completion.pipeline import fit_to_line, keys_for

        line = req.line
        original = doc.line_text(line).rstrip("\r\n")
        # the server's speculative prefetch predicts the same auto-indent
        unit = doc.indent_unit(line)
        indent = next_line_indent(accepted + req.line_suffix, doc.spec, unit)
        new = accepted + req.line_suffix + "\n" + indent

        def edit(end: lsp.Position, text: str) -> None:
            start = lsp.Position(line=line, character=0)
            rng = lsp.Range(start=start, end=end)
            doc.apply_changes([lsp.TextDocumentContentChangePartial(range=rng, text=text)])

        edit(lsp.Position(line=line, character=utf16_len(original)), new)
        cursor = lsp.Position(line=line + 1, character=utf16_len(indent))
        try:
            ctx = self.answers.context(doc, cursor)
            raw = self.answers.answer(ctx)  # reads the prompt: before the undo
        finally:
            edit(cursor, original)
        key, anchor = keys_for(ctx)
        return replace(
            req,
            index=-1,
            line=line + 1,
            character=cursor.character,
            key=key,
            anchor=anchor,
            line_prefix=ctx.line_prefix,
            line_suffix=ctx.line_suffix,
            line_context=ctx.line_context,
            expect=None,
            at_line_start=ctx.at_line_start,
            answer_raw=raw,
            answer=fit_to_line(raw, ctx.line_suffix),
        )

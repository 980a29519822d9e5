"""textDocument/didOpen, didChange and didClose: keep the document store current."""

from __future__ import annotations

import logging
import time

from lsprotocol import types

from lsp_server.documents.store import UnknownDocumentError
from lsp_server.server.language_server import ScopecacheServer

logger = logging.getLogger(__name__)


def register(server: ScopecacheServer) -> None:
    """Register the document sync handlers."""

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ScopecacheServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        ls.documents.open(doc.uri, doc.language_id, doc.version, doc.text)
        ls.cross_file.note_open(doc.uri)
        if ls.recorder is not None:
            ls.recorder.open(doc.uri, doc.language_id, doc.text)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: ScopecacheServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        started = time.perf_counter()
        before = ls.accepts.text_before(uri, params.content_changes)
        try:
            ls.documents.change(uri, params.text_document.version, params.content_changes)
        except UnknownDocumentError:
            logger.warning("didChange for a document that is not open: %s", uri)
            return
        ls.accepts.changed(uri, params.content_changes, before)
        ls.metrics.record_keystroke(time.perf_counter() - started)
        ls.stats.keystrokes += 1
        changes = params.content_changes
        last = changes[-1] if changes else None
        new_line = isinstance(last, types.TextDocumentContentChangePartial) and "\n" in last.text
        ls.throttle.note_keystroke(uri, new_line=new_line)
        first = changes[0] if changes else None
        if isinstance(first, types.TextDocumentContentChangePartial):
            ls.cross_file.note_edit(uri, first.range.start.line)
        if ls.recorder is not None:
            ls.recorder.change(uri, params.content_changes)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: ScopecacheServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.inflight.cancel_document(uri)
        ls.throttle.forget(uri)
        ls.pipeline.turns.forget(uri)
        ls.speculator.forget(uri)
        ls.cross_file.forget(uri)
        ls.accepts.closed(uri)
        if ls.recorder is not None:
            ls.recorder.close(uri)
        ls.documents.close(uri)

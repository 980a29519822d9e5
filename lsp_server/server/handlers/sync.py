"""textDocument/didOpen, didChange and didClose: keep the document store current.

didChange, one per keystroke, goes by the protocol's immediate route
(``ScopecacheProtocol.handle_immediately``) when its params have the shape
editors send (``plain_change_params``); any other shape goes pygls's way to
the same handler.
"""

from __future__ import annotations

import logging
import time
from functools import partial
from typing import Any

from lsprotocol import types

from lsp_server.documents.store import UnknownDocumentError
from lsp_server.server.language_server import ScopecacheServer
from lsp_server.server.protocol import ScopecacheProtocol

logger = logging.getLogger(__name__)

_CHANGE_KEYS = frozenset(("textDocument", "contentChanges"))
_VERSIONED_KEYS = frozenset(("uri", "version"))
_WHOLE_KEYS = frozenset(("text",))
_PARTIAL_KEYS = frozenset(("range", "text"))
_PARTIAL_LENGTH_KEYS = frozenset(("range", "rangeLength", "text"))
_RANGE_KEYS = frozenset(("start", "end"))
_POSITION_KEYS = frozenset(("line", "character"))


def register(server: ScopecacheServer) -> None:
    """Register the document sync handlers."""

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ScopecacheServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        ls.documents.open(doc.uri, doc.language_id, doc.version, doc.text)
        ls.cross_file.note_open(doc.uri)
        if ls.recorder is not None:
            ls.recorder.open(doc.uri, doc.language_id, doc.text)

    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    if isinstance(server.protocol, ScopecacheProtocol):
        server.protocol.handle_immediately(
            types.TEXT_DOCUMENT_DID_CHANGE, plain_change_params, partial(did_change, server)
        )

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


def did_change(ls: ScopecacheServer, params: types.DidChangeTextDocumentParams) -> None:
    """Apply an edit to the document store and note it where the server keeps track."""
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


def plain_change_params(raw: Any) -> types.DidChangeTextDocumentParams | None:
    """The params of a didChange of the shape editors send, as lsprotocol's objects; else None.

    The plain shape: exactly ``textDocument`` (a string ``uri`` and an
    integer ``version``) and ``contentChanges``, a list of changes that are
    each a ``range`` (two positions of integer ``line`` and ``character``),
    an optional integer ``rangeLength`` and the ``text``, or the ``text``
    alone (the whole document). Values out of LSP's range are refused as
    lsprotocol refuses them; anything else goes pygls's way, so that what
    happens to a message that does not fit stays what pygls does.
    """
    if type(raw) is not dict or raw.keys() != _CHANGE_KEYS:
        return None
    document, raw_changes = raw["textDocument"], raw["contentChanges"]
    if type(document) is not dict or document.keys() != _VERSIONED_KEYS:
        return None
    uri, version = document["uri"], document["version"]
    if type(uri) is not str or type(version) is not int or type(raw_changes) is not list:
        return None
    changes: list[types.TextDocumentContentChangeEvent] = []
    try:
        for raw_change in raw_changes:
            change = _plain_change(raw_change)
            if change is None:
                return None
            changes.append(change)
        identifier = types.VersionedTextDocumentIdentifier(uri=uri, version=version)
    except ValueError:  # out of LSP's range: lsprotocol's validators say so
        return None
    return types.DidChangeTextDocumentParams(
        text_document=identifier, content_changes=tuple(changes)  # a tuple, as the converter's
    )


def _plain_change(raw: Any) -> types.TextDocumentContentChangeEvent | None:
    if type(raw) is not dict or type(raw.get("text")) is not str:
        return None
    keys = raw.keys()
    if keys == _WHOLE_KEYS:
        return types.TextDocumentContentChangeWholeDocument(text=raw["text"])
    if keys != _PARTIAL_KEYS and keys != _PARTIAL_LENGTH_KEYS:
        return None
    span, length = raw["range"], raw.get("rangeLength")
    if type(span) is not dict or span.keys() != _RANGE_KEYS:
        return None
    if length is not None and type(length) is not int:
        return None
    start, end = _plain_position(span["start"]), _plain_position(span["end"])
    if start is None or end is None:
        return None
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=start, end=end), text=raw["text"], range_length=length
    )


def _plain_position(raw: Any) -> types.Position | None:
    if type(raw) is not dict or raw.keys() != _POSITION_KEYS:
        return None
    line, character = raw["line"], raw["character"]
    if type(line) is not int or type(character) is not int:
        return None
    return types.Position(line=line, character=character)

"""The JSON-RPC protocol as scopecache needs it, on top of pygls's.

Two departures from pygls's defaults, both deliberate:

* document sync goes only to our own incremental ``DocumentStore``; pygls's
  workspace would keep a second copy of every buffer and re-split its lines
  on every keystroke;
* a request or notification without ``params`` (allowed by JSON-RPC, e.g.
  ``scopecache/stats``) is given ``params: null`` instead of failing to
  deserialize.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol, lsp_method


class ScopecacheProtocol(LanguageServerProtocol):
    """pygls's language server protocol without its own document store."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        """Accept requests and notifications that omit ``params``."""
        if "method" in data and "params" not in data:
            data = {**data, "params": None}
        return super().structure_message(data)

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(
        self, params: types.DidOpenTextDocumentParams
    ) -> Generator[Any, Any, None]:
        """Hand the document to our handler only."""
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(
        self, params: types.DidChangeTextDocumentParams
    ) -> Generator[Any, Any, None]:
        """Hand the change to our handler only."""
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(
        self, params: types.DidCloseTextDocumentParams
    ) -> Generator[Any, Any, None]:
        """Hand the close to our handler only."""
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None

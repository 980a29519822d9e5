"""The JSON-RPC protocol as scopecache needs it, on top of pygls's.

Departures from pygls's defaults, all deliberate:

* document sync goes only to our own incremental ``DocumentStore``; pygls's
  workspace would keep a second copy of every buffer and re-split its lines
  on every keystroke;
* a request or notification without ``params`` (allowed by JSON-RPC, e.g.
  ``scopecache/stats``) is given ``params: null`` instead of failing to
  deserialize;
* every request gets an answer: params that do not fit the method's type get
  -32602 InvalidParams (pygls drops such a request silently, so the client
  would wait forever), and a request before ``initialize`` gets -32002
  ServerNotInitialized (notifications then are dropped, as LSP says). Frames
  come from ``lsp_server.server.framing``, which answers bodies that are not messages;
* a notification handled by a generator (didOpen, didChange, didClose) does
  not stay behind in pygls's table of running requests: pygls 2.1 files it
  there and never removes it, one leaked future per keystroke;
* list completion (``completionProvider``) is not offered to a client that
  says it shows inline completions, unless ``completion.listAlongsideInline``
  asks for it: VS Code would open its suggestion list beside the ghost text,
  and Tab would accept the list item instead. Requests are still answered.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Generator
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCResponseMessage, LanguageServerProtocol, lsp_method

from lsp_server.settings import Settings

logger = logging.getLogger(__name__)


class ScopecacheProtocol(LanguageServerProtocol):
    """pygls's language server protocol without its own document store."""

    #: set by the first ``initialize`` request; before it, requests get -32002
    _initialize_seen = False

    def structure_message(self, data: dict[str, Any]) -> Any:
        """Accept requests and notifications that omit ``params``."""
        if "method" in data and "params" not in data:
            data = {**data, "params": None}
        return super().structure_message(data)

    def receive(self, data: dict[str, Any]) -> None:
        """Structure and handle one JSON-RPC object; bad params of a request get -32602."""
        method = data.get("method")
        if isinstance(method, str) and self._refused_before_initialize(method, data.get("id")):
            return
        try:
            message = self.structure_message(data)
        except JsonRpcException:
            method = data.get("method")
            if method is not None and "id" in data:
                self.send_error(
                    data["id"], types.ErrorCodes.InvalidParams, f"Invalid params for {method}"
                )
            else:
                logger.warning("dropped a notification or response that does not fit: %s", method)
            return
        self.handle_message(message)

    def handle_message(self, message: Any) -> None:
        """Answer requests before ``initialize`` with -32002 and drop notifications then."""
        method = getattr(message, "method", None)
        if isinstance(method, str) and self._refused_before_initialize(
            method, getattr(message, "id", None)
        ):
            return
        super().handle_message(message)

    def _refused_before_initialize(self, method: str, msg_id: Any) -> bool:
        if self._initialize_seen or method == types.EXIT:
            return False
        if method == types.INITIALIZE:
            self._initialize_seen = True
            return False
        if msg_id is not None:
            self.send_error(
                msg_id,
                types.ErrorCodes.ServerNotInitialized,
                f"server not initialized: {method} before initialize",
            )
        else:
            logger.debug("notification %s before initialize dropped", method)
        return True

    def _check_handler_result(self, future: Any) -> None:
        # pygls calls this when a notification's handler is done, but for a
        # generator handler it also filed the future under a random id in
        # _request_futures and never removes it; drop it here (the table holds
        # only running requests, so the scan is short).
        super()._check_handler_result(future)
        for key in [k for k, f in self._request_futures.items() if f is future]:
            del self._request_futures[key]

    def rehearse(self, method: str, params: dict[str, Any], answer: Any) -> None:
        """Structure a request of ``method`` and serialize ``answer`` as its response.

        Nothing is dispatched or sent: this makes cattrs generate its
        functions for these types now (``lsp_server.server.first_use``), not on the
        user's first request.
        """
        request = {"jsonrpc": "2.0", "id": "scopecache-rehearsal", "method": method}
        self.structure_message({**request, "params": params})
        # Answers to the client's requests go out as the generic response type
        # (pygls's _send_response); the result is unstructured by its own type.
        json.dumps(
            JsonRPCResponseMessage(id="scopecache-rehearsal", result=answer, jsonrpc="2.0"),
            default=self._serialize_message,
        )

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        """Send a JSON-RPC error answer (``msg_id`` None is sent as ``"id": null``)."""
        self._send_data(
            {"jsonrpc": "2.0", "id": msg_id, "error": {"code": int(code), "message": message}}
        )

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(
        self, params: types.InitializeParams
    ) -> Generator[Any, Any, types.InitializeResult]:
        """Answer initialize as pygls does, minus list completion for ghost-text clients."""
        result: types.InitializeResult = yield from super().lsp_initialize(params)
        # Our initialize handler has applied the initializationOptions by now.
        settings = getattr(self._server, "settings", None)
        if isinstance(settings, Settings) and not offers_list_completion(
            params.capabilities, settings
        ):
            result.capabilities.completion_provider = None
        return result

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



def offers_list_completion(capabilities: types.ClientCapabilities, settings: Settings) -> bool:
    """True when ``completionProvider`` goes into the answer to ``initialize``.

    A client that shows inline completions gets it only when
    ``completion.listAlongsideInline`` is on.
    """
    text_document = capabilities.text_document
    if text_document is None or text_document.inline_completion is None:
        return True
    return settings.completion.list_alongside_inline

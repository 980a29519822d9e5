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
  and Tab would accept the list item instead. Requests are still answered;
* a method registered with ``answer_immediately`` (inline completion) is
  answered in the loop iteration that read it when its answer is in memory
  (see "The immediate route" below);
* a notification registered with ``handle_immediately`` (didChange, one per
  keystroke, and ``$/cancelRequest``, one per keystroke while a miss waits)
  goes straight to its handler when its params have the plain shape: pygls's
  dispatch (structuring through cattrs, two ``isinstance`` checks against
  runtime protocols, a uuid, a future and a generator per message) cost more
  than applying the edit did. pygls runs such a handler synchronously as the
  message is read, and so does this; a failure is reported as pygls reports
  it, params of another shape go pygls's way.

The immediate route. pygls answers a request in three loop iterations: one
structures the message and creates the handler's task, one runs the task,
one sends the result from the task's done callback, serialized through
cattrs. For a cache hit that is most of the server's time. ``receive``
therefore hands a request of a registered method, when its params have the
plain shape, straight to its answer function, which returns the answer as
JSON text or a ``Pending`` (a miss). An answer is written at once, through
the same writer and framed the same way; a ``Pending`` becomes the request's
task exactly as pygls files one (in ``_request_futures``, answered by
``_send_handler_result``), so ``$/cancelRequest``, error answers and
shutdown treat it as any request. The route is not taken, and the request
goes pygls's way, before ``initialize``, after ``shutdown``, for params of
any other shape (pygls's own answer, e.g. -32602, stays the one given), and
while a handler task of an earlier message has not started yet: handlers
then still start in the order their messages arrived.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import logging
import sys
from collections.abc import Callable, Generator
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from json.encoder import encode_basestring_ascii as json_string
from typing import Any

from lsprotocol import types
from pygls.exceptions import FeatureNotificationError, JsonRpcException, JsonRpcInternalError
from pygls.protocol import JsonRPCResponseMessage, LanguageServerProtocol, lsp_method

from lsp_server.completion.pending import Pending
from lsp_server.settings import Settings

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ImmediateRoute:
    """How requests of one method may be answered in the loop iteration that read them."""

    #: the handler's params from the message's raw ``params``, or None: go pygls's way
    params: Callable[[Any], Any | None]
    #: the result as JSON text (sent at once), or ``Pending`` with the rest to await
    answer: Callable[[Any], str | Pending[Any]]


@dataclass(frozen=True, slots=True)
class ImmediateNotification:
    """How notifications of one method may go to their handler without pygls's dispatch."""

    #: the handler's params from the message's raw ``params``, or None: go pygls's way
    params: Callable[[Any], Any | None]
    handle: Callable[[Any], None]


class ScopecacheProtocol(LanguageServerProtocol):
    """pygls's language server protocol without its own document store."""

    #: set by the first ``initialize`` request; before it, requests get -32002
    _initialize_seen = False

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        self._immediate: dict[str, ImmediateRoute] = {}
        self._immediate_notifications: dict[str, ImmediateNotification] = {}
        self.handle_immediately(types.CANCEL_REQUEST, plain_cancel_id, self._cancel_request)

    def _cancel_request(self, msg_id: int | str) -> None:
        """Cancel the request ``msg_id`` if it is still running; say nothing if it was answered.

        An editor cancels its last request at every key while a miss waits, and
        most of those were answered already (a hit is answered as it is read):
        that is routine, not worth a log record per keystroke.
        """
        future = self._request_futures.pop(msg_id, None)
        if future is not None and future.cancel():
            logger.debug("cancelled request %s", msg_id)

    def answer_immediately(
        self,
        method: str,
        params: Callable[[Any], Any | None],
        answer: Callable[[Any], str | Pending[Any]],
    ) -> None:
        """Answer ``method`` on the immediate route (module docstring) when it can be.

        ``params`` turns the raw params into the handler's, or returns None
        when they are not of the plain shape it reads (the request then goes
        pygls's way); ``answer`` returns the result as JSON text (sent as it
        is) or a ``Pending`` (its result goes through the converter, as a
        handler's does).
        """
        self._immediate[method] = ImmediateRoute(params, answer)

    def handle_immediately(
        self, method: str, params: Callable[[Any], Any | None], handle: Callable[[Any], None]
    ) -> None:
        """Hand notifications of ``method`` straight to ``handle`` when ``params`` reads them.

        ``params`` turns the raw params into the handler's, or returns None
        when they are not of the plain shape it reads (the notification then
        goes pygls's way).
        """
        self._immediate_notifications[method] = ImmediateNotification(params, handle)

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
        route = self._immediate.get(method) if isinstance(method, str) else None
        if route is not None and "id" in data and self._answered_immediately(route, data):
            return
        notification = (
            self._immediate_notifications.get(method) if isinstance(method, str) else None
        )
        if notification is not None and "id" not in data and self._handled_now(notification, data):
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

    def _answered_immediately(self, route: ImmediateRoute, data: dict[str, Any]) -> bool:
        """Answer on the immediate route; False when the request must go pygls's way."""
        if self._shutdown or self._handler_waiting_to_start():
            return False
        params = route.params(data.get("params"))
        if params is None:
            return False
        # As pygls runs a handler: in a copy of the context, with its request id set.
        contextvars.copy_context().run(self._answer_now, data["id"], route.answer, params)
        return True

    def _handled_now(self, notification: ImmediateNotification, data: dict[str, Any]) -> bool:
        """Run a notification's handler now; False when it must go pygls's way."""
        if self._shutdown:
            return False
        params = notification.params(data.get("params"))
        if params is None:
            return False
        try:
            notification.handle(params)
        except Exception:
            # as pygls reports a notification handler's failure
            error = JsonRpcInternalError.of(sys.exc_info())  # type: ignore[no-untyped-call]
            self._server._report_server_error(error, FeatureNotificationError)
        return True

    def _answer_now(
        self, msg_id: Any, answer: Callable[[Any], str | Pending[Any]], params: Any
    ) -> None:
        self._ctx_msg_id.set(msg_id)
        try:
            result = answer(params)
        except Exception as exc:
            failed: Future[Any] = Future()
            failed.set_exception(exc)
            self._send_handler_result(failed, msg_id=msg_id)  # pygls's error answer
            return
        if isinstance(result, Pending):
            # Filed and answered as pygls does for a coroutine handler.
            task: Any = asyncio.ensure_future(result.rest)
            self._request_futures[msg_id] = task
            task.add_done_callback(partial(self._send_handler_result, msg_id=msg_id))
            return
        self._send_result_json(msg_id, result)

    def _send_result_json(self, msg_id: str | int, result: str) -> None:
        """Write a response whose result is JSON text already, framed as ``_send_data`` frames."""
        if self.writer is None:
            logger.error("Unable to send data, no available transport!")
            return
        json_id = json_string(msg_id) if isinstance(msg_id, str) else str(msg_id)
        body = f'{{"jsonrpc":"2.0","id":{json_id},"result":{result}}}'.encode()
        header = (
            f"Content-Length: {len(body)}\r\n"
            f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
        )
        try:
            written = self.writer.write(header.encode() + body)
            # None from a pipe's writer: no abstract-class check on the hit path
            if written is not None and inspect.isawaitable(written):
                asyncio.ensure_future(written)
        except BrokenPipeError:
            logger.exception("Error sending data. BrokenPipeError")
            raise
        except Exception as error:
            logger.exception("Error sending data")
            self._server._report_server_error(error, JsonRpcInternalError)

    def _handler_waiting_to_start(self) -> bool:
        """Whether an earlier message's handler task has not run its first step yet."""
        return bool(self._request_futures) and any(
            _not_started(future) for future in self._request_futures.values()
        )

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



def plain_cancel_id(raw: Any) -> int | str | None:
    """The id of ``$/cancelRequest`` params of the plain shape (an integer or string ``id``)."""
    if type(raw) is not dict or len(raw) != 1:
        return None
    msg_id = raw.get("id")
    return msg_id if type(msg_id) is int or type(msg_id) is str else None


def _not_started(future: Any) -> bool:
    """Whether ``future`` is a task whose coroutine has not run yet."""
    coro = future.get_coro() if isinstance(future, asyncio.Task) else None
    return inspect.iscoroutine(coro) and inspect.getcoroutinestate(coro) == inspect.CORO_CREATED


def offers_list_completion(capabilities: types.ClientCapabilities, settings: Settings) -> bool:
    """True when ``completionProvider`` goes into the answer to ``initialize``.

    A client that shows inline completions gets it only when
    ``completion.listAlongsideInline`` is on.
    """
    text_document = capabilities.text_document
    if text_document is None or text_document.inline_completion is None:
        return True
    return settings.completion.list_alongside_inline

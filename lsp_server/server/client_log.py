"""The server's log records to the editor as ``window/logMessage``.

Neovim writes everything a language server prints on stderr to its
``lsp.log`` at ERROR, so an INFO line there reads as a failure. With
``scopecache serve --log-to-client`` (or ``SCOPECACHE_LOG_TO_CLIENT=1`` in
its environment, which the Neovim plugin sets) each record goes to the client
as a ``window/logMessage`` whose type is the record's level, and the editor
files it at that level::

    CRITICAL, ERROR -> Error     WARNING -> Warning
    INFO            -> Info      DEBUG   -> Debug (LSP 3.18; Neovim: DEBUG)

``--log-level`` still chooses which records exist; the editor's own log level
chooses which it keeps. What cannot go over LSP goes to stderr as before:
records from before the client connected, and records logged while a log
message is being sent (the protocol's own errors). After the client has
left (``exit`` closed the protocol's writer) only warnings and errors go to
stderr; what the server logs about its own shutdown is dropped, where the
editor would file it at ERROR.

Only the thread that runs the protocol writes to it: a record logged on
another thread (settings rebuilt in a worker thread) is handed to the event
loop the server runs on. The filters on the root handlers apply as to any
handler, the transport's secret redactor among them, and the messages are
written by the protocol's writer: nothing else reaches stdout.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from lsp_server.server.language_server import ScopecacheServer

#: the environment variable that turns forwarding on, as ``--log-to-client`` does
LOG_TO_CLIENT_ENV = "SCOPECACHE_LOG_TO_CLIENT"

#: how a forwarded line reads (the editor adds its own time and level)
FORWARDED_FORMAT = "%(name)s: %(message)s"


def message_type(levelno: int) -> types.MessageType:
    """The ``window/logMessage`` type of a record at ``levelno``."""
    if levelno >= logging.ERROR:
        return types.MessageType.Error
    if levelno >= logging.WARNING:
        return types.MessageType.Warning
    if levelno >= logging.INFO:
        return types.MessageType.Info
    return types.MessageType.Debug


def writer_closed(writer: object) -> bool:
    """Whether the protocol's writer was closed: stdio after ``exit``, a TCP connection."""
    closed = getattr(writer, "closed", None)
    if isinstance(closed, bool):
        return closed
    is_closing = getattr(writer, "is_closing", None)
    return bool(is_closing()) if callable(is_closing) else False


class ClientLogHandler(logging.Handler):
    """Sends log records to the client; ``fallback`` takes what cannot be sent."""

    def __init__(self, fallback: logging.Handler) -> None:
        super().__init__()
        self.fallback = fallback
        self.setFormatter(logging.Formatter(FORWARDED_FORMAT))
        self._server: ScopecacheServer | None = None
        self._protocol_thread: int | None = None
        self._local = threading.local()

    def attach(self, server: ScopecacheServer) -> None:
        """Forward through ``server``; call this on the thread that will run it."""
        self._server = server
        self._protocol_thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        """Send ``record`` now, hand it to the server's loop, or pass it to the fallback."""
        server = self._server
        if server is None or server.protocol.writer is None or self._sending():
            self.fallback.handle(record)
            return
        if writer_closed(server.protocol.writer):
            self._client_left(record)
            return
        try:
            params = types.LogMessageParams(
                type=message_type(record.levelno), message=self.format(record)
            )
        except Exception:
            self.handleError(record)
            return
        if threading.get_ident() == self._protocol_thread:
            self._send(params, record)
            return
        loop = server.loop
        if loop is None or loop.is_closed():
            self.fallback.handle(record)
            return
        try:
            loop.call_soon_threadsafe(self._send, params, record)
        except RuntimeError:  # the loop closed in between
            self.fallback.handle(record)

    def _sending(self) -> bool:
        return bool(getattr(self._local, "sending", False))

    def _send(self, params: types.LogMessageParams, record: logging.LogRecord) -> None:
        server = self._server
        if server is None or server.protocol.writer is None:
            self.fallback.handle(record)
            return
        if writer_closed(server.protocol.writer):
            self._client_left(record)
            return
        self._local.sending = True
        try:
            server.window_log_message(params)
        except Exception:  # the client is gone (a closed pipe): keep the record
            self.fallback.handle(record)
        finally:
            self._local.sending = False

    def _client_left(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.fallback.handle(record)

    def close(self) -> None:
        """Close the fallback too."""
        self.fallback.close()
        super().close()


"""Drive a real ``scopecache serve`` process over stdio, as an editor does.

Used by ``replay``, ``demo``, the benchmarks and the end-to-end tests, so all
of them exercise exactly what an editor would: the real process, real
JSON-RPC framing, real cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from lsp_server.server.first_use import rehearse_client

logger = logging.getLogger(__name__)

#: how long shutdown may take before the process is killed
SHUTDOWN_TIMEOUT = 5.0

#: how much of the server's stderr is kept (its tail), for messages and ``stderr_text``
STDERR_KEPT = 64 * 1024


class ServerExited(RuntimeError):
    """The server process ended while an answer was awaited from it."""


def default_command() -> list[str]:
    """``scopecache serve`` with this interpreter (works without the console script)."""
    return [sys.executable, "-m", "lsp_server", "serve"]


class ServerProcess:
    """A real language server process and a client connected to it."""

    def __init__(
        self,
        init_options: Mapping[str, Any] | None = None,
        *,
        command: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        log_file: str | Path | None = None,
        log_level: str = "INFO",
        log_to_client: bool = False,
        position_encodings: Sequence[str] = ("utf-16",),
    ) -> None:
        self.init_options = dict(init_options or {})
        self.command = list(command or default_command())
        self.env = dict(os.environ if env is None else env)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if log_file is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="scopecache-client-")
            log_file = Path(self._tmp.name) / "server.log"
        self.log_file = Path(log_file)
        self.log_level = log_level
        #: the server sends its log as window/logMessage (``--log-to-client``, no log file)
        self.log_to_client = log_to_client
        self.log_messages: list[types.LogMessageParams] = []
        self._stderr = bytearray()
        self._stderr_reader: asyncio.Task[None] | None = None
        self.position_encodings = list(position_encodings)
        self.client = LanguageClient("scopecache-driver", "1")
        self.messages: list[types.ShowMessageParams] = []
        self._ids = itertools.count(1)
        self._versions: dict[str, int] = {}
        self.initialize_result: types.InitializeResult | None = None

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)  # type: ignore[untyped-decorator]
        def show_message(params: types.ShowMessageParams) -> None:
            self.messages.append(params)

        @self.client.feature(types.WINDOW_LOG_MESSAGE)  # type: ignore[untyped-decorator]
        def log_message(params: types.LogMessageParams) -> None:
            self.log_messages.append(params)
            logger.debug("server log: %s", params.message)

    async def start(self) -> types.InitializeResult:
        """Start the process and run the initialize handshake."""
        where = ["--log-to-client"] if self.log_to_client else ["--log-file", str(self.log_file)]
        args = [*self.command, *where, "--log-level", self.log_level]
        await self.client.start_io(args[0], *args[1:], env=self.env)
        server = self.client._server
        if server is not None and server.stderr is not None:
            # read all along: a server whose stderr pipe fills up blocks on its next line
            self._stderr_reader = asyncio.create_task(self._drain_stderr(server.stderr))
        capabilities = types.ClientCapabilities(
            general=types.GeneralClientCapabilities(
                position_encodings=[types.PositionEncodingKind(e) for e in self.position_encodings]
            ),
            text_document=types.TextDocumentClientCapabilities(
                inline_completion=types.InlineCompletionClientCapabilities(),
                synchronization=types.TextDocumentSyncClientCapabilities(),
            ),
            window=types.WindowClientCapabilities(),
        )
        self.initialize_result = await self.client.initialize_async(
            types.InitializeParams(
                capabilities=capabilities,
                process_id=os.getpid(),
                initialization_options=self.init_options,
            )
        )
        self.client.initialized(types.InitializedParams())
        rehearse_client(self.client.protocol)
        return self.initialize_result

    async def stop(self) -> None:
        """Shut the server down politely, killing it if it does not exit."""
        server = getattr(self.client, "_server", None)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.client.shutdown_async(None), SHUTDOWN_TIMEOUT)
            self.client.exit(None)
        if server is not None:
            try:
                await asyncio.wait_for(server.wait(), SHUTDOWN_TIMEOUT)
            except TimeoutError:
                server.kill()
                await server.wait()
        if self._stderr_reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._stderr_reader, SHUTDOWN_TIMEOUT)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.client.stop(), SHUTDOWN_TIMEOUT)  # type: ignore[no-untyped-call]
        if self._tmp is not None:
            self._tmp.cleanup()

    async def __aenter__(self) -> ServerProcess:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _drain_stderr(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self._stderr += chunk
            del self._stderr[:-STDERR_KEPT]

    @property
    def stderr_text(self) -> str:
        """What the server wrote on stderr (the last ``STDERR_KEPT`` bytes)."""
        return self._stderr.decode("utf-8", "replace")

    async def exited(self) -> int:
        """Wait until the server process has ended; its exit code."""
        server = self.client._server
        if server is None:
            raise RuntimeError("the server was never started")
        return await server.wait()

    def _exit_code(self) -> int | None:
        server = getattr(self.client, "_server", None)
        return server.returncode if server is not None else None

    @property
    def pid(self) -> int | None:
        """The server's process id."""
        server = getattr(self.client, "_server", None)
        return server.pid if server is not None else None

    # -- documents --------------------------------------------------------

    def open(self, uri: str, text: str, language_id: str = "python") -> None:
        """textDocument/didOpen."""
        self._versions[uri] = 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id=language_id, version=1, text=text
                )
            )
        )

    def change(self, uri: str, changes: Sequence[Mapping[str, Any]]) -> None:
        """textDocument/didChange with LSP change events given as JSON objects."""
        self._versions[uri] = self._versions.get(uri, 0) + 1
        events = [_change_event(c) for c in changes]
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=uri, version=self._versions[uri]
                ),
                content_changes=events,
            )
        )

    def insert(self, uri: str, line: int, character: int, text: str) -> None:
        """Insert ``text`` at a position (one keystroke or a paste)."""
        pos = {"line": line, "character": character}
        self.change(uri, [{"range": {"start": pos, "end": pos}, "text": text}])

    def close(self, uri: str) -> None:
        """textDocument/didClose."""
        self._versions.pop(uri, None)
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )

    # -- requests ---------------------------------------------------------

    def request(self, method: str, params: Any) -> tuple[str, asyncio.Future[Any]]:
        """Send a request; returns its id (for ``cancel``) and the pending answer."""
        msg_id = f"d{next(self._ids)}"
        code = self._exit_code()
        if code is not None:
            # the client fails what is pending when the process ends; a later request
            # would never be answered
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            future.set_exception(
                ServerExited(
                    f"{method}: the server exited with code {code}; its stderr ends:\n"
                    + self.stderr_text[-2000:]
                )
            )
            return msg_id, future
        future = self.client.protocol.send_request_async(method, params, msg_id=msg_id)
        return msg_id, future

    def cancel(self, msg_id: str) -> None:
        """$/cancelRequest for an outstanding request."""
        self.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))

    def inline_params(self, uri: str, line: int, character: int) -> types.InlineCompletionParams:
        """Parameters of an automatic inline completion request."""
        return types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character),
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Automatic
            ),
        )

    async def inline(
        self, uri: str, line: int, character: int
    ) -> types.InlineCompletionItem | None:
        """Ask for an inline completion and return its first item, if any."""
        _, future = self.request(
            types.TEXT_DOCUMENT_INLINE_COMPLETION, self.inline_params(uri, line, character)
        )
        result = await future
        items = getattr(result, "items", None) or (result if isinstance(result, list) else [])
        return items[0] if items else None

    async def inline_text(self, uri: str, line: int, character: int) -> str | None:
        """The inline suggestion's text, or None."""
        item = await self.inline(uri, line, character)
        if item is None:
            return None
        text = item.insert_text
        return text if isinstance(text, str) else text.value

    async def complete(self, uri: str, line: int, character: int) -> types.CompletionList:
        """textDocument/completion."""
        _, future = self.request(
            types.TEXT_DOCUMENT_COMPLETION,
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=character),
            ),
        )
        result: types.CompletionList = await future
        return result

    async def stats(self) -> dict[str, Any]:
        """scopecache/stats."""
        _, future = self.request("scopecache/stats", {})
        stats: dict[str, Any] = _plain(await future)
        return stats

    async def health(self, params: Any = None) -> dict[str, Any]:
        """scopecache/health (``params`` as sent: omitted/None, ``{}``...)."""
        _, future = self.request("scopecache/health", params)
        health: dict[str, Any] = _plain(await future)
        return health

    async def clear_cache(self) -> dict[str, Any]:
        """scopecache/clearCache."""
        _, future = self.request("scopecache/clearCache", {})
        cleared: dict[str, Any] = _plain(await future)
        return cleared

    async def accepted(
        self, item_id: str, *, kind: str | None = None, length: int | None = None
    ) -> Any:
        """workspace/executeCommand scopecache.accepted (``kind``/``length``: a partial accept)."""
        arguments: list[Any] = [item_id]
        if kind is not None or length is not None:
            arguments.append({"kind": kind or "full", "acceptedLength": length})
        _, future = self.request(
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(command="scopecache.accepted", arguments=arguments),
        )
        return _plain(await future)

    def configure(self, settings: Mapping[str, Any]) -> None:
        """workspace/didChangeConfiguration with ``{"scopecache": settings}``."""
        self.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"scopecache": dict(settings)})
        )


def _change_event(change: Mapping[str, Any]) -> types.TextDocumentContentChangeEvent:
    if "range" not in change or change["range"] is None:
        return types.TextDocumentContentChangeWholeDocument(text=change["text"])
    r = change["range"]
    return types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(**r["start"]), end=types.Position(**r["end"])),
        text=change["text"],
    )


def _plain(value: Any) -> Any:
    """Turn pygls's attribute-style result objects back into plain JSON data."""
    if hasattr(value, "_asdict"):  # pygls's result objects are named tuples
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return {k: _plain(v) for k, v in vars(value).items()}
    return value

"""Write one completion response: emulated latency, streaming, and faults.

Given a parsed request (``Ask``) in some ``Dialect``, the responder asks the
engine, waits ``ttft`` before the first token and ``token`` between tokens,
and writes either one body or a stream of chunks, keeping the stream
counters right whether the stream completes, the client leaves
(``streamsCancelled``) or a fault breaks it on purpose (``streamsAborted``).
Fault modes are documented in ``lsp_server.kit.reference.faults``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from lsp_server.kit.reference import asgi
from lsp_server.kit.reference.asgi import ClientGone, ClientWatch, Send
from lsp_server.kit.reference.dialects import Ask, Dialect
from lsp_server.kit.reference.engine import Completion, CorpusEngine, count_tokens
from lsp_server.kit.reference.faults import Fault
from lsp_server.kit.reference.stats import ServiceStats

logger = logging.getLogger(__name__)

_BAD = "@@not-utf8@@"
_FILLER = "0123456789abcdef"


class Aborted(Exception):
    """The service dropped the connection on purpose; write nothing more."""


@dataclass
class Latency:
    """Emulated model latency in milliseconds."""

    ttft_ms: float = 0.0
    token_ms: float = 0.0


def _filler(size: int) -> str:
    return (_FILLER * (size // len(_FILLER) + 1))[:size]


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@dataclass(frozen=True)
class Exchange:
    """One completion request being answered: what was asked and where to write."""

    send: Send
    watch: ClientWatch
    dialect: Dialect
    ask: Ask
    #: the armed fault, ``NO_FAULT`` when the request is to be answered normally
    fault: Fault
    #: the request's ``recent`` entry in the service stats, filled in as it goes
    record: dict[str, Any]


class Responder:
    """Answers completion requests for the app."""

    def __init__(
        self,
        engine: CorpusEngine,
        stats: ServiceStats,
        latency: Latency,
        abort: Callable[[], bool],
        cut: Callable[[], Awaitable[bool]],
        before_last_chunk: Callable[[], None] | None = None,
    ) -> None:
        self._engine = engine
        self._stats = stats
        self._latency = latency
        self._abort_connection = abort
        self._cut_connection = cut
        #: called just before a stream's last chunk (the response ends with it)
        self._before_last_chunk = before_last_chunk

    def _abort(self) -> None:
        """Reset the connection before any response byte."""
        self._stats.streams_aborted += 1
        self._abort_connection()
        raise Aborted

    async def _cut(self) -> None:
        """End the connection in the middle of a response."""
        self._stats.streams_aborted += 1
        await self._cut_connection()
        raise Aborted

    def _complete(self, ask: Ask, fault: Fault) -> tuple[Completion, list[str]]:
        if fault.mode in ("huge", "flood"):
            default = 1_000_000 if fault.mode == "huge" else 16_000_000
            text = _filler(int(fault.number("size", default)))
            done = Completion(text, "stop", count_tokens(ask.prefix), len(ask.prefix))
            return done, _pieces(text, 4096 if fault.mode == "huge" else 65536)
        done = self._engine.complete(
            ask.prefix,
            ask.suffix,
            max_tokens=ask.max_tokens,
            stop=ask.stop,
            multiline=ask.multiline,
            probabilities=ask.probabilities,
        )
        pieces = done.tokens
        if not pieces and fault.mode in ("malformed-json", "invalid-utf8"):
            pieces = ["oops"]  # these faults need one chunk to spoil
        return done, pieces

    async def respond(self, ex: Exchange) -> None:
        """Write the whole response; never raises for a vanished client."""
        try:
            await self._respond(ex)
        except ClientGone:
            if ex.record.get("stream") and ex.record.get("status") == 200:
                self._stats.streams_cancelled += 1
            ex.record["cancelled"] = True
        except Aborted:
            ex.record["aborted"] = True

    async def _respond(self, ex: Exchange) -> None:
        mode = ex.fault.mode
        if mode == "slow-headers":
            await ex.watch.sleep(ex.fault.number("delay", 5.0))
        if mode == "reset":
            self._abort()
        if mode == "status":
            await self._status(ex)
            return
        completion, pieces = self._complete(ex.ask, ex.fault)
        ex.record["stream"] = ex.ask.stream
        if ex.ask.stream:
            await self._stream(ex, completion, pieces)
        else:
            await self._whole(ex, completion, pieces)

    async def _status(self, ex: Exchange) -> None:
        status = int(ex.fault.number("status", 500))
        headers: list[tuple[str, str]] = []
        retry_after = ex.fault.params.get("retryAfter")
        if retry_after is not None:
            headers.append(("retry-after", str(retry_after)))
        ex.record["status"] = status
        await asgi.send_error(ex.send, status, f"injected fault: status {status}", headers)

    async def _whole(self, ex: Exchange, completion: Completion, pieces: list[str]) -> None:
        send, watch, dialect, ask, fault = ex.send, ex.watch, ex.dialect, ex.ask, ex.fault
        lat = self._latency
        generation = lat.ttft_ms + lat.token_ms * max(0, len(pieces) - 1)
        await watch.sleep(generation / 1000.0)
        mode = fault.mode
        ex.record["status"] = 200
        if mode == "never-ending":
            await asgi.start(send, 200, "application/json")
            while True:
                await asgi.body(send, b" ", more=True)
                await watch.sleep(fault.number("interval", 0.05))
        data = dialect.full(ask, completion)
        if mode in ("malformed-json", "malformed-sse"):
            data = b'{"choices": [{"text": "oops"' if mode == "malformed-json" else b"garbage\n"
        elif mode == "invalid-utf8":
            completion = Completion(_BAD, "stop", completion.prompt_tokens)
            data = dialect.full(ask, completion).replace(_BAD.encode(), b"\xff\xfe\xfd")
        if mode == "reset-mid-stream":
            await asgi.start(send, 200, "application/json", [("content-length", str(len(data)))])
            await asgi.body(send, data[: len(data) // 2], more=True)
            await self._cut()
        await asgi.send_bytes(send, 200, data, "application/json")

    async def _stream(self, ex: Exchange, completion: Completion, pieces: list[str]) -> None:
        send, watch, dialect, ask, fault = ex.send, ex.watch, ex.dialect, ex.ask, ex.fault
        mode = fault.mode
        headers = [("cache-control", "no-cache")]
        await asgi.start(send, 200, dialect.media_type, headers)
        ex.record["status"] = 200
        self._stats.streams_started += 1
        ttft, gap = self._latency.ttft_ms / 1000.0, self._latency.token_ms / 1000.0
        fast = mode in ("huge", "flood")
        if mode == "malformed-sse":
            await watch.sleep(ttft)
            for line in (b"this is not server-sent events\n\n", b"event-ish: 42\nnope\n\n"):
                await asgi.body(send, line, more=True)
            await asgi.body(send, b"")
            self._stats.streams_completed += 1
            return
        if mode == "never-ending":
            await watch.sleep(ttft)
            while True:
                await asgi.body(send, dialect.chunk(ask, " tick"), more=True)
                await watch.sleep(fault.number("interval", 0.05))
        reset_after = int(fault.number("chunks", 2))
        for i, piece in enumerate(pieces):
            if mode == "reset-mid-stream" and i >= reset_after:
                await self._cut()
            await watch.sleep(0 if fast else (ttft if i == 0 else gap))
            shares = completion.probabilities
            share = shares[i] if i < len(shares) else None
            await asgi.body(send, dialect.chunk(ask, piece, share), more=True)
            if mode == "malformed-json":
                await asgi.body(send, dialect.broken_chunk())
                self._stats.streams_completed += 1
                return
            if mode == "invalid-utf8" and i == 0:
                bad = dialect.chunk(ask, _BAD).replace(_BAD.encode(), b"\xff\xfe\xfd")
                await asgi.body(send, bad, more=True)
        if not pieces:
            await watch.sleep(ttft)
        if mode == "reset-mid-stream":
            await self._cut()
        if self._before_last_chunk is not None:
            self._before_last_chunk()
        await asgi.body(send, dialect.finish(ask, completion))
        self._stats.streams_completed += 1

"""A loopback TCP tap in front of llama.cpp that times every completion request it relays.

The bytes pass through unchanged, both ways, as they arrive; a copy of each
direction is read as HTTP/1.1 (llama.cpp speaks nothing else) to note, for
every ``POST /infill`` or ``/completion``: when its first byte arrived, its
JSON body, when each server-sent event of its answer arrived (its
``content``, ``stop`` and, in the last one, llama.cpp's ``timings``), and
when the client closed the connection before the answer ended (a stream
given up). The latency breakdown of a new suggestion reads these times
against the keys' (``tests.bench.bench_new_suggestion_latency``).

All times are ``time.perf_counter()`` in this process, the clock the typing
driver reads too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

#: the request paths whose answers are timed
TIMED_PATHS = ("/infill", "/completion")


@dataclass
class Event:
    """One server-sent event of an answer, as it arrived."""

    t: float
    content: str
    stop: bool
    timings: dict[str, Any] | None


@dataclass
class Relayed:
    """One timed request and what came back for it."""

    path: str
    #: when its first byte reached the tap
    t: float
    body: dict[str, Any] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    #: when the client closed the connection before the answer's last event
    closed: float | None = None

    @property
    def first_token(self) -> float | None:
        """When the first event with text arrived."""
        return next((e.t for e in self.events if e.content), None)

    @property
    def ended(self) -> float | None:
        """When the last event arrived (``stop``), else when the client gave up."""
        last = self.events[-1] if self.events else None
        if last is not None and last.stop:
            return last.t
        return self.closed

    @property
    def text(self) -> str:
        """The answer's text so far."""
        return "".join(e.content for e in self.events)

    def line_done(self) -> float | None:
        """When the answer's first line with text was complete: a newline after it, or its end.

        An answer at a line's end starts with a newline: its first line is
        the next one. An answer the client closed (cut by its bounds, or
        given up) ends when it closed.
        """
        text = ""
        for event in self.events:
            text += event.content
            start = len(text) - len(text.lstrip())
            if (text.strip() and "\n" in text[start:]) or event.stop:
                return event.t
        return self.closed

    @property
    def timings(self) -> dict[str, Any] | None:
        """llama.cpp's ``timings`` of the answer (its last event), when it ended."""
        return next((e.timings for e in reversed(self.events) if e.timings), None)


class _Http1Reader:
    """Reads one direction of an HTTP/1.1 connection incrementally (a copy of its bytes)."""

    def __init__(self) -> None:
        self.buf = b""
        self.state = "head"
        self.remaining = 0
        self.chunked = False
        self.body = b""
        self.head = b""

    def feed(self, data: bytes) -> list[tuple[str, bytes]]:
        """Read ``data``: ("head", the head) when a message's head is complete,
        ("body", a piece) per piece of its body, ("end", b"") when it is complete."""
        self.buf += data
        out: list[tuple[str, bytes]] = []
        while True:
            if self.state == "head":
                end = self.buf.find(b"\r\n\r\n")
                if end < 0:
                    return out
                self.head, self.buf = self.buf[:end], self.buf[end + 4 :]
                out.append(("head", self.head))
                headers = _headers(self.head)
                self.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
                self.remaining = int(headers.get("content-length", "0") or 0)
                if self.chunked:
                    self.state = "size"
                elif self.remaining:
                    self.state = "fixed"
                else:
                    out.append(("end", b""))
            elif self.state == "fixed":
                if not self.buf:
                    return out
                piece, self.buf = self.buf[: self.remaining], self.buf[self.remaining :]
                self.remaining -= len(piece)
                out.append(("body", piece))
                if self.remaining == 0:
                    self.state = "head"
                    out.append(("end", b""))
            elif self.state == "size":
                end = self.buf.find(b"\r\n")
                if end < 0:
                    return out
                size = int(self.buf[:end].split(b";")[0] or b"0", 16)
                self.buf = self.buf[end + 2 :]
                if size == 0:
                    self.state = "trailer"
                else:
                    self.remaining = size
                    self.state = "chunk"
            elif self.state == "chunk":
                if not self.buf:
                    return out
                piece, self.buf = self.buf[: self.remaining], self.buf[self.remaining :]
                self.remaining -= len(piece)
                out.append(("body", piece))
                if self.remaining == 0:
                    self.state = "chunk-end"
            elif self.state == "chunk-end":
                if len(self.buf) < 2:
                    return out
                self.buf = self.buf[2:]
                self.state = "size"
            elif self.state == "trailer":
                end = self.buf.find(b"\r\n")
                if end < 0:
                    return out
                line, self.buf = self.buf[:end], self.buf[end + 2 :]
                if not line:
                    self.state = "head"
                    out.append(("end", b""))


def _headers(head: bytes) -> dict[str, str]:
    lines = head.decode("latin-1").split("\r\n")[1:]
    pairs = (line.split(":", 1) for line in lines if ":" in line)
    return {name.strip().lower(): value.strip() for name, value in pairs}


class SseTap:
    """The tap: ``url`` in front of ``upstream`` (``host:port`` of the real server)."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.relayed: list[Relayed] = []
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """Where clients connect."""
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> SseTap:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 2.0)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        #: this connection's requests whose answers have not ended, oldest first
        waiting: list[Relayed | None] = []
        requests = _Http1Reader()
        answers = _Http1Reader()
        current: list[Relayed | None] = [None]
        body = bytearray()
        answer_of: list[Relayed | None] = [None]
        sse = bytearray()

        def on_request(data: bytes, now: float) -> None:
            for kind, piece in requests.feed(data):
                if kind == "head":
                    line = piece.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
                    path = line[1] if len(line) > 1 else ""
                    timed = line[0] == "POST" and path.split("?")[0] in TIMED_PATHS
                    current[0] = Relayed(path, now) if timed else None
                    body.clear()
                elif kind == "body":
                    body.extend(piece)
                elif kind == "end":
                    relayed = current[0]
                    if relayed is not None:
                        with contextlib.suppress(ValueError):
                            relayed.body = json.loads(bytes(body))
                        self.relayed.append(relayed)
                    waiting.append(relayed)

        def on_answer(data: bytes, now: float) -> None:
            for kind, piece in answers.feed(data):
                if kind == "head":
                    answer_of[0] = waiting.pop(0) if waiting else None
                    sse.clear()
                elif kind == "body" and answer_of[0] is not None:
                    sse.extend(piece)
                    while (end := sse.find(b"\n\n")) >= 0:
                        block, rest = bytes(sse[:end]), bytes(sse[end + 2 :])
                        sse[:] = rest
                        _note_event(answer_of[0], block, now)
                elif kind == "end":
                    answer_of[0] = None

        async def pipe(
            src: asyncio.StreamReader, dst: asyncio.StreamWriter, note: Any, client_side: bool
        ) -> None:
            try:
                while data := await src.read(65536):
                    now = time.perf_counter()
                    dst.write(data)
                    note(data, now)
                    await dst.drain()
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                if client_side:
                    now = time.perf_counter()
                    for relayed in [answer_of[0], *waiting]:
                        if relayed is not None and relayed.ended is None:
                            relayed.closed = now
                with contextlib.suppress(Exception):
                    dst.close()

        await asyncio.gather(
            pipe(reader, up_writer, on_request, True),
            pipe(up_reader, writer, on_answer, False),
        )


def _note_event(relayed: Relayed, block: bytes, now: float) -> None:
    for line in block.decode("utf-8", "replace").split("\n"):
        if not line.startswith("data:"):
            continue
        with contextlib.suppress(ValueError):
            chunk = json.loads(line[5:].strip())
            if isinstance(chunk, dict):
                content = chunk.get("content")
                timings = chunk.get("timings")
                relayed.events.append(
                    Event(
                        now,
                        content if isinstance(content, str) else "",
                        chunk.get("stop") is True,
                        timings if isinstance(timings, dict) else None,
                    )
                )

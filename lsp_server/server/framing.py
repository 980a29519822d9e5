"""Reading LSP base-protocol frames from an untrusted byte stream.

pygls's own reader (``pygls.io_.run_async``) trusts its client: a body that
is not JSON is logged and dropped without an answer, a request whose params
do not fit is dropped the same way, a wrong ``Content-Length`` makes it lose
the messages that follow, and a header "line" without a newline is read
whole into memory. An editor extension with a bug must not be able to wedge
or bloat the server, so ``serve_stdio`` and ``serve_tcp`` run this reader
instead:

* a body that is not JSON (or not UTF-8) gets the JSON-RPC parse error
  ``{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, ...}}``;
* a JSON array (a JSON-RPC batch, which LSP does not have) or a value that is
  not a JSON-RPC 2.0 object gets -32600 Invalid Request;
* header lines are read in bounded pieces, and a ``Content-Length`` header is
  recognised at the end of any line, so after a too-short or too-long length
  the reader resynchronises at the next header instead of losing the rest of
  the session; a header block without a usable length gets a parse error;
* a declared length above ``MAX_MESSAGE_BYTES`` is refused (-32600) and its
  body skipped in bounded pieces, never buffered.

Structuring the message and answering its request are the protocol's job
(``ScopecacheProtocol.receive``).

Stdin is read on the event loop itself when it is a pipe or a socket
(``PipeLineReader``, chosen by ``open_line_reader``): pygls (and
``BoundedStdinReader``) read it with blocking calls in a worker thread,
four thread-pool round trips per message, each costing more than answering
a cache hit on a loaded machine. Under every editor stdin is a pipe or a
socket, so the bytes of a message arrive with one ``epoll`` wake-up and are
parsed without leaving the loop. ``open_line_reader`` falls back to the
thread reader for anything else (a terminal, a regular file, an in-memory
stream) and when stdin and stdout share one open file (making stdin
non-blocking would make stdout writes fail with ``BlockingIOError``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import stat
import sys
import threading
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, cast

from pygls.io_ import StdoutWriter

if TYPE_CHECKING:
    from pygls.server import JsonRPCServer

logger = logging.getLogger(__name__)

#: the longest header line read at once; longer input is read (and skipped) in pieces
MAX_HEADER_LINE = 4096
#: the largest message accepted (a 20 MB document fits; it is served, not parsed)
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

PARSE_ERROR = -32700
INVALID_REQUEST = -32600

# Anchored at the end of the line, not the start: after a wrong length the
# next header often arrives glued to the leftover of the previous body.
_CONTENT_LENGTH = re.compile(rb"content-length:[ \t]*([^\r\n]*?)[ \t]*\r?\n$", re.IGNORECASE)
#: bytes of an unfinished line kept so a header split across two pieces is still found
_CARRY = 64
_CANONICAL_PREFIX = b"Content-Length: "


class FrameSink(Protocol):
    """What the reader hands frames to (``ScopecacheProtocol``)."""

    def receive(self, data: dict[str, Any]) -> None:
        """Structure and dispatch one JSON-RPC message object."""

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        """Answer with a JSON-RPC error (``msg_id`` None: ``"id": null``)."""


class LineReader(Protocol):
    """The reader interface: bounded lines and exact reads."""

    async def readline(self) -> bytes:
        """At most ``MAX_HEADER_LINE`` bytes, up to and including a newline."""

    async def readexactly(self, n: int) -> bytes:
        """``n`` bytes, fewer only at end of input."""


class BoundedStdinReader:
    """Reads a blocking binary stream in a worker thread, lines bounded in length."""

    def __init__(self, stream: BinaryIO, executor: Executor | None = None) -> None:
        self.stream = stream
        self.executor = executor

    async def readline(self) -> bytes:
        """One line, or the next ``MAX_HEADER_LINE`` bytes of a longer one."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, self.stream.readline, MAX_HEADER_LINE)

    async def readexactly(self, n: int) -> bytes:
        """``n`` bytes (fewer at end of input)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, self.stream.read, n)


class BoundedStreamReader:
    """Reads an asyncio stream (a TCP connection), lines bounded in length.

    The stream must be opened with ``limit=MAX_HEADER_LINE``: a longer line
    is then handed out in pieces of at most that size, never buffered whole.
    """

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.stream = stream

    async def readline(self) -> bytes:
        """One line, or the next ``MAX_HEADER_LINE`` bytes of a longer one."""
        try:
            return await self.stream.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial  # end of input inside a line
        except asyncio.LimitOverrunError as exc:
            return await self.stream.read(max(1, min(exc.consumed, MAX_HEADER_LINE)))

    async def readexactly(self, n: int) -> bytes:
        """``n`` bytes (fewer at end of input)."""
        try:
            return await self.stream.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


class PipeLineReader:
    """A ``LineReader`` over an ``asyncio.StreamReader`` fed by the loop."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def readline(self) -> bytes:
        """One line, or the next ``MAX_HEADER_LINE`` bytes of a longer one."""
        try:
            return await self._reader.readuntil(b"\n")
        except asyncio.LimitOverrunError:
            # No newline within the limit: hand out a bounded piece, like the thread reader.
            return await self._reader.read(MAX_HEADER_LINE)
        except asyncio.IncompleteReadError as exc:
            return exc.partial  # end of input

    async def readexactly(self, n: int) -> bytes:
        """``n`` bytes (fewer at end of input)."""
        try:
            return await self._reader.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


def loop_readable(stream: BinaryIO, other: BinaryIO | None = None) -> bool:
    """Whether ``stream`` is a pipe or socket the event loop can watch on its own.

    ``other`` (stdout) must not be the same open file: the loop makes the
    file non-blocking, which would break blocking writes to it.
    """
    try:
        fd = stream.fileno()
        info = os.fstat(fd)
    except (AttributeError, OSError, ValueError):
        return False
    if not (stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode)):
        return False
    if other is not None:
        try:
            if os.path.samestat(info, os.fstat(other.fileno())):
                return False
        except (AttributeError, OSError, ValueError):
            pass
    return True


async def open_line_reader(
    stream: BinaryIO, executor: Executor | None = None, *, stdout: BinaryIO | None = None
) -> LineReader:
    """The fastest safe reader for ``stream``: on the loop if it can be, else in a thread."""
    if loop_readable(stream, stdout):
        loop = asyncio.get_running_loop()
        # The limit bounds a header line; bodies are read with readexactly, unbounded by it.
        reader = asyncio.StreamReader(limit=MAX_HEADER_LINE, loop=loop)
        protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
        await loop.connect_read_pipe(lambda: protocol, stream)
        logger.debug("reading stdin on the event loop")
        return PipeLineReader(reader)
    logger.debug("reading stdin in a worker thread")
    return BoundedStdinReader(stream, executor)


def dispatch_body(sink: FrameSink, body: bytes) -> None:
    """Decode one body and hand it on, answering what cannot be a message."""
    try:
        data = json.loads(body)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        logger.warning("message body is not JSON (%d bytes): %s", len(body), exc)
        sink.send_error(None, PARSE_ERROR, f"Parse error: {exc}")
        return
    if isinstance(data, list):
        logger.warning("JSON-RPC batch of %d messages refused", len(data))
        sink.send_error(None, INVALID_REQUEST, "Invalid Request: LSP has no batch messages")
        return
    if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
        logger.warning("not a JSON-RPC 2.0 message: %.80r", data)
        msg_id = data.get("id") if isinstance(data, dict) else None
        sink.send_error(valid_id(msg_id), INVALID_REQUEST, "Invalid Request: not JSON-RPC 2.0")
        return
    if "id" in data and valid_id(data["id"]) is None and "method" in data:
        sink.send_error(None, INVALID_REQUEST, "Invalid Request: id must be a string or number")
        return
    sink.receive(data)


def _canonical_length(line: bytes) -> int | None:
    """The length in a header line as clients write it (``Content-Length: 123`` CRLF), or None.

    A shortcut for the common case only: any other spelling, and a length
    out of bounds, go through the general rules of ``read_frames``.
    """
    if line.startswith(_CANONICAL_PREFIX) and line.endswith(b"\r\n"):
        value = line[len(_CANONICAL_PREFIX) : -2]
        if value.isdigit() and int(value) <= MAX_MESSAGE_BYTES:
            return int(value)
    return None


def valid_id(msg_id: Any) -> str | int | None:
    """``msg_id`` when JSON-RPC allows it as a request id, else None."""
    if isinstance(msg_id, str) or (isinstance(msg_id, int) and not isinstance(msg_id, bool)):
        return msg_id
    return None


async def read_frames(stop_event: threading.Event, reader: LineReader, sink: FrameSink) -> None:
    """Read frames until end of input or ``stop_event``; never gives up on bad input."""
    length: int | None = None
    trouble: tuple[int, str] | None = None  # what to answer for a header without a length
    carry = b""
    while not stop_event.is_set():
        line = await reader.readline()
        if not line:
            break
        if not carry and line == b"\r\n" and length is not None:
            pass  # the blank line after a well-formed header block: its body follows
        elif not carry and (canonical := _canonical_length(line)) is not None:
            length, trouble = canonical, None
            continue
        else:
            match = _CONTENT_LENGTH.search(carry + line)
            carry = b"" if line.endswith(b"\n") else line[-_CARRY:]
            if match is not None:
                value = match.group(1)
                length, trouble = None, None
                if not value.isdigit():
                    trouble = (PARSE_ERROR, f"Content-Length is not a number: {value[:40]!r}")
                elif int(value) > MAX_MESSAGE_BYTES:
                    trouble = (INVALID_REQUEST, f"message too large: {int(value)} bytes")
                else:
                    length = int(value)
                continue
            if line.strip():
                # Another header (Content-Type), or junk: skipped; junk where a
                # header block should start earns a parse error at its blank line.
                if length is None and trouble is None:
                    trouble = (PARSE_ERROR, "Parse error: header block without Content-Length")
                continue
            if length is None:
                # End of a header block without a usable length: the body that
                # follows is skipped line by line until the next header.
                if trouble is not None:
                    logger.warning("unusable frame: %s", trouble[1])
                    sink.send_error(None, *trouble)
                    trouble = None
                continue
        body = await reader.readexactly(length)
        if len(body) < length:
            break  # end of input inside a body
        length = None
        try:
            dispatch_body(sink, body)
        except Exception:  # one bad message must never end the session
            logger.exception("unable to handle a message")


class StdioWriter(StdoutWriter):
    """pygls's stdout writer, telling whether it was closed (``exit`` closes it)."""

    def __init__(self, stdout: BinaryIO) -> None:
        super().__init__(stdout)
        self._out = stdout

    @property
    def closed(self) -> bool:
        """Nothing can be written any more."""
        return bool(self._out.closed)


def serve_stdio(
    server: JsonRPCServer, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> int:
    """Run ``server`` on stdio with ``read_frames``; mirrors pygls's ``start_io``.

    Returns the process's exit code: 1 after an ``exit`` without ``shutdown``
    first (LSP), else 0.
    """
    stop_event = threading.Event()
    server._stop_event = stop_event  # pygls's shutdown() sets it to end the loop
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    server.protocol.set_writer(StdioWriter(stdout))
    sink: Any = server.protocol

    async def serve() -> None:
        reader = await open_line_reader(stdin, server.thread_pool, stdout=stdout)
        await read_frames(stop_event, reader, sink)

    code = 0
    try:
        asyncio.run(serve())
    except BrokenPipeError:
        logger.error("connection to the client is lost; shutting down")
    except KeyboardInterrupt:
        pass
    except SystemExit as exc:  # the exit notification: pygls's handler chose the code
        code = exit_code(exc)
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]
    return code


def exit_code(exc: SystemExit) -> int:
    """The exit code a ``SystemExit`` asks for (an int, else 0 for None and 1 for anything else)."""
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1


def serve_tcp(server: JsonRPCServer, host: str, port: int) -> int:
    """Run ``server`` for one TCP client with ``read_frames``; mirrors pygls's ``start_tcp``.

    Port 0 picks a free port; the address actually bound is logged at INFO
    ("listening on tcp HOST:PORT"). LSP has one client per server: a second
    connection while the first is open is closed at once, and the server
    shuts down when the first client disconnects (as pygls's does).
    """
    stop_event = threading.Event()
    server._stop_event = stop_event
    code = 0
    try:
        asyncio.run(_serve_one_client(server, stop_event, host, port))
    except KeyboardInterrupt:
        pass
    except SystemExit as exc:
        code = exit_code(exc)
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]
    return code


async def _serve_one_client(
    server: JsonRPCServer, stop_event: threading.Event, host: str, port: int
) -> None:
    finished = asyncio.Event()
    connected = False

    async def on_connect(stream: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connected
        if connected:
            logger.warning("refused a second client on the TCP port: one client per server")
            writer.close()
            return
        connected = True
        logger.info("client connected from %s", writer.get_extra_info("peername"))
        server.protocol.set_writer(cast(Any, writer))
        sink: Any = server.protocol
        try:
            await read_frames(stop_event, BoundedStreamReader(stream), sink)
        except (ConnectionError, OSError) as exc:
            logger.error("connection to the client is lost (%s); shutting down", exc)
        finally:
            finished.set()

    listener = await asyncio.start_server(on_connect, host, port, limit=MAX_HEADER_LINE)
    for sock in listener.sockets:
        bound_host, bound_port = sock.getsockname()[:2]
        logger.info("listening on tcp %s:%d", bound_host, bound_port)
    async with listener:
        await finished.wait()

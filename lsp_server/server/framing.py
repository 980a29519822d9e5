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

Frames are cut from the bytes by ``FrameDecoder``, which does no I/O: it is
fed whatever a read returned and hands out each completed body. Stdin is
read by the event loop itself when it is a pipe or a socket
(``FrameProtocol``, chosen by ``read_stream``), and each frame a read
completes is dispatched in the same callback: a request is answered in the
loop iteration that read it, with no reader task to wake. pygls reads stdin
with blocking calls in a worker thread, four thread-pool round trips per
message, each costing more than answering a cache hit on a loaded machine.
Under every editor stdin is a pipe or a socket. ``read_stream`` falls back
to reading pieces in a worker thread for anything else (a terminal, a
regular file, an in-memory stream) and when stdin and stdout share one open
file (making stdin non-blocking would make stdout writes fail with
``BlockingIOError``); a TCP connection is read in pieces on the loop.
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
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from functools import partial
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple, Protocol, cast

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
#: the most a worker thread (or a TCP connection) reads at once
CHUNK = 256 * 1024
#: bytes of an unfinished line kept so a header split across two pieces is still found
_CARRY = 64
_CANONICAL_PREFIX = b"Content-Length: "


class FrameSink(Protocol):
    """What the reader hands frames to (``ScopecacheProtocol``)."""

    def receive(self, data: dict[str, Any]) -> None:
        """Structure and dispatch one JSON-RPC message object."""

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        """Answer with a JSON-RPC error (``msg_id`` None: ``"id": null``)."""


class FrameError(NamedTuple):
    """Input that is not a frame, answered with a JSON-RPC error (``"id": null``)."""

    code: int
    message: str


class FrameDecoder:
    """Splits a byte stream, fed in pieces of any size, into frame bodies; no I/O.

    ``feed`` returns, in input order, each complete body and a
    ``FrameError`` for each header block that cannot frame one. Header
    lines are taken one at a time, at most ``MAX_HEADER_LINE`` bytes: a
    longer line is taken in pieces of that size (its last ``_CARRY`` bytes
    kept, so a ``Content-Length`` split between two pieces is still found),
    so what waits for more input between calls is a body being read or
    less than one header line.
    """

    def __init__(self) -> None:
        self._pending = bytearray()
        #: the header block's usable length; None before one (or after trouble)
        self._length: int | None = None
        #: what to answer at the end of a header block without a usable length
        self._trouble: FrameError | None = None
        #: the end of the last piece of an unfinished line
        self._carry = b""
        #: the header block has ended: ``_length`` bytes of body follow
        self._in_body = False

    @property
    def buffered(self) -> int:
        """Bytes received and not yet handed out (a body's, or part of a header line)."""
        return len(self._pending)

    def feed(self, data: bytes) -> list[bytes | FrameError]:
        """The bodies and errors that ``data`` completes, in order."""
        pending = self._pending
        pending += data
        out: list[bytes | FrameError] = []
        at = 0
        while True:
            if self._in_body:
                length = self._length or 0
                if len(pending) - at < length:
                    break
                out.append(bytes(pending[at : at + length]))
                at += length
                self._in_body, self._length = False, None
                continue
            newline = pending.find(b"\n", at, at + MAX_HEADER_LINE)
            if newline >= 0:
                end = newline + 1
            elif len(pending) - at >= MAX_HEADER_LINE:
                end = at + MAX_HEADER_LINE  # no newline within the bound: a piece
            else:
                break  # less than a line: wait for more
            error = self._header_line(bytes(pending[at:end]))
            at = end
            if error is not None:
                out.append(error)
        del pending[:at]
        return out

    def _header_line(self, line: bytes) -> FrameError | None:
        """Take one header line (or piece of one); an error when it ends an unusable block."""
        if not self._carry:
            if line == b"\r\n" and self._length is not None:
                self._in_body = True  # the blank line after a well-formed header block
                return None
            canonical = _canonical_length(line)
            if canonical is not None:
                self._length, self._trouble = canonical, None
                return None
        match = _CONTENT_LENGTH.search(self._carry + line)
        self._carry = b"" if line.endswith(b"\n") else line[-_CARRY:]
        if match is not None:
            self._length, self._trouble = _declared_length(match.group(1))
            return None
        if line.strip():
            # Another header (Content-Type), or junk: skipped; junk where a
            # header block should start earns a parse error at its blank line.
            if self._length is None and self._trouble is None:
                self._trouble = FrameError(
                    PARSE_ERROR, "Parse error: header block without Content-Length"
                )
            return None
        if self._length is None:
            # End of a header block without a usable length: the body that
            # follows is skipped line by line until the next header.
            trouble, self._trouble = self._trouble, None
            return trouble
        self._in_body = True
        return None


def _declared_length(value: bytes) -> tuple[int | None, FrameError | None]:
    """A ``Content-Length`` value as a usable length, or the trouble with it."""
    if not value.isdigit():
        return None, FrameError(PARSE_ERROR, f"Content-Length is not a number: {value[:40]!r}")
    if int(value) > MAX_MESSAGE_BYTES:
        return None, FrameError(INVALID_REQUEST, f"message too large: {int(value)} bytes")
    return int(value), None


def deliver(sink: FrameSink, frames: list[bytes | FrameError]) -> None:
    """Hand decoded frames on in order; one bad message never ends the session."""
    for frame in frames:
        try:
            if isinstance(frame, FrameError):
                logger.warning("unusable frame: %s", frame.message)
                sink.send_error(None, frame.code, frame.message)
            else:
                dispatch_body(sink, frame)
        except Exception:
            logger.exception("unable to handle a message")


class FrameProtocol(asyncio.Protocol):
    """Frames from a pipe or socket the event loop reads, handed on as they complete.

    The loop calls ``data_received`` with what one ``read`` returned; each
    frame it completes is dispatched in that call, so a request is answered
    in the loop iteration that read it.
    """

    def __init__(self, sink: FrameSink, stop_event: threading.Event) -> None:
        self._sink = sink
        self._stop_event = stop_event
        self._decoder = FrameDecoder()
        #: resolved at end of input or when the pipe fails
        self.finished: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        """Dispatch the frames ``data`` completes (none once the server stops)."""
        if not self._stop_event.is_set():
            deliver(self._sink, self._decoder.feed(data))

    def eof_received(self) -> None:
        """End of input."""
        self._finish()

    def connection_lost(self, exc: Exception | None) -> None:
        """The pipe is closed or failed."""
        if exc is not None:
            logger.error("reading stdin failed: %s", exc)
        self._finish()

    def _finish(self) -> None:
        if not self.finished.done():
            self.finished.set_result(None)


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


async def read_stream(
    stream: BinaryIO,
    sink: FrameSink,
    stop_event: threading.Event,
    executor: Executor | None = None,
    *,
    stdout: BinaryIO | None = None,
) -> None:
    """Hand the frames of ``stream`` to ``sink`` until end of input, the fastest safe way.

    A pipe or socket is read by the event loop (``FrameProtocol``), anything
    else in pieces by a worker thread (``read_frames``).
    """
    loop = asyncio.get_running_loop()
    if loop_readable(stream, stdout):
        protocol = FrameProtocol(sink, stop_event)
        await loop.connect_read_pipe(lambda: protocol, stream)
        logger.debug("reading stdin on the event loop")
        await protocol.finished
        return
    logger.debug("reading stdin in a worker thread")
    read_some = getattr(stream, "read1", None) or stream.read
    await read_frames(stop_event, partial(loop.run_in_executor, executor, read_some, CHUNK), sink)


async def read_frames(
    stop_event: threading.Event, read_chunk: Callable[[], Awaitable[bytes]], sink: FrameSink
) -> None:
    """Hand on the frames of the pieces ``read_chunk`` returns until it returns none."""
    decoder = FrameDecoder()
    while not stop_event.is_set():
        chunk = await read_chunk()
        if not chunk:
            break
        deliver(sink, decoder.feed(chunk))


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
        await read_stream(stdin, sink, stop_event, server.thread_pool, stdout=stdout)

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
            await read_frames(stop_event, partial(stream.read, CHUNK), sink)
        except (ConnectionError, OSError) as exc:
            logger.error("connection to the client is lost (%s); shutting down", exc)
        finally:
            finished.set()

    listener = await asyncio.start_server(on_connect, host, port)
    for sock in listener.sockets:
        bound_host, bound_port = sock.getsockname()[:2]
        logger.info("listening on tcp %s:%d", bound_host, bound_port)
    async with listener:
        await finished.wait()

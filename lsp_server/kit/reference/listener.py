"""Accept TCP connections for hypercorn, knowing each one by its peer address.

Hypercorn's own ``serve`` hides its connections from the application, yet
the service must count TCP connections exactly and, for the ``reset`` fault
modes, abort one. So the service runs its own ``asyncio`` accept loop and
hands every connection to hypercorn's ``TCPServer`` (which speaks HTTP/1.1,
h2 over TLS via ALPN and h2c with prior knowledge), registering it under its
peer address: the same ``(host, port)`` pair hypercorn puts in
``scope["client"]``, so a request can be tied to its connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypercorn.app_wrappers import ASGIWrapper
from hypercorn.asyncio.tcp_server import TCPServer
from hypercorn.asyncio.worker_context import WorkerContext
from hypercorn.config import Config
from hypercorn.events import Closed, Event, RawData, Updated
from hypercorn.protocol import ProtocolWrapper
from hypercorn.protocol.h11 import H2CProtocolRequiredError, H2ProtocolAssumedError

from lsp_server.kit.reference.stats import ServiceStats

logger = logging.getLogger(__name__)

Peer = tuple[str, int]
_LINGER_RESET = struct.pack("ii", 1, 0)
_FLUSH_TURNS = 20
_FLUSH_PAUSE = 0.005


@dataclass
class _Connection:
    ident: int
    transport: asyncio.WriteTransport
    #: close once the current response is complete (``--close-after-stream``)
    close_when_done: bool = False


class ConnectionRegistry:
    """Open connections by peer address, with ids counted from 1."""

    def __init__(self, stats: ServiceStats) -> None:
        self._stats = stats
        #: the counters connections report into
        self.stats = stats
        self._open: dict[Peer, _Connection] = {}
        self._next_id = 0

    def opened(self, peer: Peer, transport: asyncio.WriteTransport) -> int:
        """Record a newly accepted connection; returns its id."""
        self._next_id += 1
        self._stats.last_connection = self._next_id
        self._open[peer] = _Connection(self._next_id, transport)
        self._stats.connections += 1
        self._stats.open_connections += 1
        return self._next_id

    def close_after_response(self, peer: Any) -> None:
        """Close the connection once the response being written is complete."""
        conn = self._open.get(_peer(peer))
        if conn is not None:
            conn.close_when_done = True

    def take_close_request(self, peer: Peer) -> bool:
        """Whether the connection is to close now that its response is done (counted)."""
        conn = self._open.get(peer)
        if conn is None or not conn.close_when_done:
            return False
        conn.close_when_done = False
        self._stats.connections_closed_after_stream += 1
        return True

    def closed(self, peer: Peer) -> None:
        """Forget a connection that ended."""
        if self._open.pop(peer, None) is not None:
            self._stats.open_connections -= 1

    def ident(self, peer: Any) -> int:
        """The id of the connection a request with ``scope["client"] == peer`` came on."""
        conn = self._open.get(_peer(peer))
        return conn.ident if conn else 0

    def abort(self, peer: Any) -> bool:
        """Drop the connection with a TCP RST: the client sees a reset."""
        conn = self._open.get(_peer(peer))
        if conn is None:
            return False
        sock = conn.transport.get_extra_info("socket")
        if sock is not None:
            # SO_LINGER 0 makes close send RST instead of FIN.
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
        conn.transport.abort()
        return True

    async def cut(self, peer: Any) -> bool:
        """Close the connection mid-response, after what was written has left.

        A RST could overtake data still in flight and the client would lose
        the chunks it was sent; a FIN after a flush delivers them, then the
        client sees the connection end in the middle of a response.
        """
        conn = self._open.get(_peer(peer))
        if conn is None:
            return False
        transport = conn.transport
        # hypercorn hands data to the transport from its own send task: give
        # it a few turns of the loop, then wait for the socket buffer to drain.
        for turn in range(_FLUSH_TURNS):
            await asyncio.sleep(_FLUSH_PAUSE)
            if turn >= 2 and transport.get_write_buffer_size() == 0:
                break
        transport.close()
        return True


def _peer(value: Any) -> Peer:
    if isinstance(value, list | tuple) and len(value) >= 2:
        return (str(value[0]), int(value[1]))
    return ("", 0)


AsgiApp = Callable[..., Any]


#: what HTTP/1.1-only servers (cpp-httplib, uvicorn, Go net/http) answer the HTTP/2 preface
PREFACE_REJECTION = (
    b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
)


class _Http1Only:
    """Stands in for hypercorn's protocol switcher: HTTP/1.1 stays HTTP/1.1.

    hypercorn's ``ProtocolWrapper`` turns a connection into HTTP/2 when it
    sees the prior-knowledge preface; servers that speak HTTP/1.1 only answer
    it with 400 and close, and so does this.
    """

    def __init__(self, wrapper: ProtocolWrapper, server: TCPServer, stats: ServiceStats) -> None:
        self._protocol = wrapper.protocol
        self._server = server
        self._stats = stats

    async def handle(self, event: Event) -> None:
        """Hand ``event`` to the HTTP/1.1 protocol; reject a switch to HTTP/2."""
        try:
            await self._protocol.handle(event)
        except (H2ProtocolAssumedError, H2CProtocolRequiredError):
            self._stats.h2_prefaces_rejected += 1
            await self._server.protocol_send(RawData(data=PREFACE_REJECTION))
            await self._server.protocol_send(Closed())


class _ClosingTCPServer(TCPServer):
    """hypercorn's connection handler, ending as soon as the client hangs up.

    After the peer closes, hypercorn's protocols do not report the close
    back, so the keep-alive idle timer would hold the finished connection
    (and its task) for the whole keep-alive timeout. With ``http1_only`` the
    connection never switches to HTTP/2.
    """

    http1_only: ServiceStats | None = None
    #: asked when a response is complete: close the connection now?
    close_when_idle: Callable[[], bool] | None = None

    async def protocol_send(self, event: Event) -> None:
        await super().protocol_send(event)
        idle = isinstance(event, Updated) and event.idle
        if idle and self.close_when_idle is not None and self.close_when_idle():
            # Everything written so far goes out first, then the FIN: EOF right
            # after the last chunk, without a "Connection: close" header.
            await self._close()

    async def _read_data(self) -> None:
        if self.http1_only is not None:
            self.protocol = _Http1Only(self.protocol, self, self.http1_only)  # type: ignore[assignment]
        await super()._read_data()
        await self.idle_task.stop()


class Listener:
    """Serves an ASGI app with hypercorn's protocol machinery on one socket."""

    def __init__(
        self,
        app: AsgiApp,
        config: Config,
        registry: ConnectionRegistry,
        ssl_context: ssl.SSLContext | None = None,
        *,
        http1_only: bool = False,
    ) -> None:
        self._app = ASGIWrapper(app)
        self._http1_only = http1_only
        self._config = config
        self._registry = registry
        self._ssl = ssl_context
        self._context = WorkerContext(None)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._server: asyncio.Server | None = None

    async def start(self, sock: socket.socket) -> None:
        """Start accepting on an already bound, listening socket."""
        self._server = await asyncio.start_server(
            self._on_connection,
            sock=sock,
            ssl=self._ssl,
            ssl_handshake_timeout=self._config.ssl_handshake_timeout if self._ssl else None,
            backlog=self._config.backlog,
        )

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            # asyncio only sets TCP_NODELAY when the listening socket was made
            # with proto=IPPROTO_TCP; without it, small writes wait for the
            # peer's delayed ACK and every response costs ~40 ms extra.
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peername = writer.get_extra_info("peername")
        peer = _peer(peername)
        ident = self._registry.opened(peer, writer.transport)
        logger.debug("connection %d from %s:%d", ident, *peer)
        loop = asyncio.get_running_loop()
        try:
            server = _ClosingTCPServer(
                self._app, loop, self._config, self._context, {}, reader, writer
            )
            if self._http1_only:
                server.http1_only = self._registry.stats
            server.close_when_idle = lambda: self._registry.take_close_request(peer)
            await server
        except (ConnectionError, ssl.SSLError, OSError) as exc:
            logger.debug("connection %d ended: %s", ident, exc)
        finally:
            self._registry.closed(peer)

    async def stop(self, grace: float = 1.0) -> None:
        """Stop accepting, let connections wind down, then cancel the rest."""
        if self._server is not None:
            self._server.close()
        await self._context.terminated.set()
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=grace)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=grace)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), grace)

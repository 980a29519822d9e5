"""How bytes reach the service: pinned addresses, TLS, protocol choice, stream reset.

``PinnedResolverBackend`` is an ``httpcore.AsyncNetworkBackend`` that
connects to the addresses the DNS prefetcher already holds, trying the next
one when an address fails. Only the TCP connect goes to the IP: httpcore does
TLS afterwards with ``server_hostname`` set to the endpoint's host name, so
SNI, certificate verification and ``Host``/``:authority`` all keep the name.

``PinnedConnection`` is one pooled connection: it connects through the
backend, negotiates TLS with ALPN (or uses h2c prior knowledge on http://),
then speaks HTTP/1.1 or HTTP/2.

``StreamResettingHTTP2Connection`` exists because httpcore 1.0 does not send
RST_STREAM when a response is closed before its end (``_response_closed``
only forgets the stream). Without the reset the service keeps generating
tokens for nobody, and the half-open stream keeps counting against the
server's concurrent-stream limit. The subclass resets the stream through the
connection's own h2 state machine (so the state stays consistent and other
streams on the connection are untouched) and then lets httpcore's
bookkeeping run unchanged.

It also keeps the connection's set-up from being cancelled half-way. httpcore
sets an HTTP/2 connection up inside its first request (the preface, then 99
of the 100 permits of its stream-count semaphore taken one ``await`` at a
time); a cancellation in between leaves permits it never took, and the next
request on the connection fails with ``ValueError: semaphore released too
many times`` when the server's SETTINGS give them back. So the request that
sets a connection up runs in a task of its own: a cancelled caller gets its
``CancelledError`` at once, and the request is cancelled as soon as the
set-up is over (its answer closed, if it came first).

It is the only code here that touches httpcore's private API: it overrides
``_response_closed`` and uses ``_h2_state``, ``_write_lock``,
``_network_stream``, ``_sent_connection_init`` and ``_init_lock`` of
``AsyncHTTP2Connection`` (httpcore 1.0). The e2e tests
``test_cancel_mid_stream_resets_stream_and_keeps_connection`` and
``test_a_request_cancelled_during_http2_setup_leaves_the_connection_usable``
guard that contract against httpcore upgrades.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import ssl
from collections.abc import Callable, Iterable
from typing import Protocol

import h2.errors
import h2.exceptions
import httpcore

from transport.errors import ConfigurationError, ProtocolRejected

logger = logging.getLogger(__name__)


class AddressSource(Protocol):
    """Where the backend gets addresses for a host name (the DNS prefetcher)."""

    async def lookup(self, host: str) -> list[str]:
        """Addresses for ``host``; cached answers while valid, else a fresh lookup."""
        ...


def tls_context(
    *, ca_file: str | None, verify: bool, http2: bool, http1: bool = True
) -> ssl.SSLContext:
    """The client TLS context: system/certifi roots plus ``ca_file``, ALPN as allowed.

    ALPN offers ``h2`` when ``http2`` and ``http/1.1`` when ``http1``, so the
    server picks among the versions the settings allow.

    ``ca_file`` adds to the default roots (it does not replace them). With
    ``verify`` off, certificates are not checked; that needs the explicit
    ``transport.verifyTls = false`` setting and is logged as a warning.
    """
    context = httpcore.default_ssl_context()
    if ca_file:
        try:
            context.load_verify_locations(cafile=ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigurationError(f"cannot load transport.caFile {ca_file!r}: {exc}") from exc
    if not verify:
        logger.warning("TLS certificate verification is OFF (transport.verifyTls = false)")
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    offered = (["h2"] if http2 else []) + (["http/1.1"] if http1 or not http2 else [])
    context.set_alpn_protocols(offered)
    return context


def is_ip_literal(host: str) -> bool:
    """Whether ``host`` is an IPv4/IPv6 literal (no lookup needed)."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


class PinnedResolverBackend(httpcore.AsyncNetworkBackend):
    """Connects to prefetched addresses; delegates sockets to httpcore's own backend."""

    def __init__(
        self,
        addresses: AddressSource | None = None,
        backend: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        self._addresses = addresses
        self._backend = backend if backend is not None else httpcore.AnyIOBackend()
        #: TCP connections successfully opened
        self.connections_opened = 0

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Connect to the first address of ``host`` that accepts."""
        if self._addresses is None or is_ip_literal(host):
            candidates = [host]
        else:
            candidates = await self._addresses.lookup(host) or [host]
        last: Exception | None = None
        for address in candidates:
            try:
                stream = await self._backend.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout, OSError) as exc:
                logger.debug("connect to %s:%d failed: %s", address, port, exc)
                last = exc
                continue
            self.connections_opened += 1
            return stream
        assert last is not None
        raise last

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Unix sockets are passed straight through."""
        return await self._backend.connect_unix_socket(
            path, timeout=timeout, socket_options=socket_options
        )

    async def sleep(self, seconds: float) -> None:
        """Sleep on the delegate's event loop."""
        await self._backend.sleep(seconds)


class StreamResettingHTTP2Connection(httpcore.AsyncHTTP2Connection):
    """An HTTP/2 connection that sends RST_STREAM(CANCEL) for abandoned streams."""

    def __init__(
        self,
        origin: httpcore.Origin,
        stream: httpcore.AsyncNetworkStream,
        keepalive_expiry: float | None = None,
        write_timeout: float | None = None,
        on_reset: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(origin=origin, stream=stream, keepalive_expiry=keepalive_expiry)
        self._reset_write_timeout = write_timeout
        #: told of every reset (the transport counts them)
        self._on_reset = on_reset
        #: abandoned set-up requests still finishing (``_cancel_after_setup``)
        self._finishing: set[asyncio.Future[None]] = set()

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        """Send ``request``; a request that sets the connection up is not cancelled mid-way."""
        if self._sent_connection_init:
            return await super().handle_async_request(request)
        first = asyncio.ensure_future(super().handle_async_request(request))
        try:
            return await asyncio.shield(first)
        except asyncio.CancelledError:
            if not first.done():
                finishing = asyncio.ensure_future(self._cancel_after_setup(first))
                self._finishing.add(finishing)
                finishing.add_done_callback(self._finishing.discard)
            raise

    async def _cancel_after_setup(self, first: asyncio.Future[httpcore.Response]) -> None:
        """Cancel an abandoned request once the set-up it started is over (or close its answer)."""
        async with self._init_lock:
            pass  # the set-up runs under this lock: now it is done, or it failed
        first.cancel()
        try:
            response = await first
        except BaseException:  # noqa: BLE001 - cancelled or failed: nobody is waiting for it
            return
        await response.aclose()

    async def _response_closed(self, stream_id: int) -> None:
        await self._reset_if_open(stream_id)
        await super()._response_closed(stream_id)

    async def _reset_if_open(self, stream_id: int) -> None:
        state = self._h2_state
        h2_stream = state.streams.get(stream_id)
        if h2_stream is None or h2_stream.closed or self.is_closed():
            return
        try:
            state.reset_stream(stream_id, error_code=h2.errors.ErrorCodes.CANCEL)
            async with self._write_lock:
                await self._network_stream.write(state.data_to_send(), self._reset_write_timeout)
        except (h2.exceptions.H2Error, httpcore.NetworkError, httpcore.TimeoutException) as exc:
            # The connection is already broken; the service sees the disconnect.
            logger.debug("could not reset stream %d: %s", stream_id, exc)
            return
        if self._on_reset is not None:
            self._on_reset()


class WrappedStream(httpcore.AsyncNetworkStream):
    """A network stream that hands every call to the stream it wraps.

    Subclasses override what they watch (``read``, ``write``) and inherit the rest.
    """

    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        self._stream = stream

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """Read from the wrapped stream."""
        return await self._stream.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Write to the wrapped stream."""
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        """Close the socket."""
        await self._stream.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """TLS over the wrapped stream."""
        return await self._stream.start_tls(ssl_context, server_hostname, timeout)

    def get_extra_info(self, info: str) -> object:
        """The wrapped stream's extra info (socket, TLS object, ALPN)."""
        return self._stream.get_extra_info(info)


class PriorKnowledgeStream(WrappedStream):
    """An h2c stream that recognises an HTTP/1.1 server's answer to the HTTP/2 preface.

    HTTP/1.1-only servers (llama.cpp, uvicorn, Ollama) answer the preface
    with ``HTTP/1.1 400`` and close. Without this, the h2 state machine
    reports a protocol error or a disconnect, and the user reads "cannot
    reach" about a server that is running.
    """

    def __init__(self, stream: httpcore.AsyncNetworkStream, host: str) -> None:
        super().__init__(stream)
        self._host = host
        self._first = True
        self._wrote = False

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """Read; the first bytes must not be an HTTP/1.x status line."""
        if not self._first:
            return await self._stream.read(max_bytes, timeout)
        try:
            data = await self._stream.read(max_bytes, timeout)
        except httpcore.ReadError as exc:
            # Closing with our unread frames in its buffer makes the server's
            # kernel send a reset, which can overtake its 400.
            raise self._rejected("it reset the connection on the HTTP/2 preface") from exc
        self._first = False
        if not data:
            raise self._rejected("it closed the connection on the HTTP/2 preface")
        if data.startswith(b"HTTP/1."):
            raise self._rejected("it answered the HTTP/2 preface in HTTP/1.1")
        return data

    def _rejected(self, how: str) -> ProtocolRejected:
        return ProtocolRejected(
            f"{self._host} speaks HTTP/1.1 only ({how}): set transport.http2 to auto"
        )

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Write through; a write failing after the preface went out is a rejection."""
        try:
            await self._stream.write(buffer, timeout)
        except httpcore.WriteError as exc:
            if self._first and self._wrote:
                raise self._rejected("it closed the connection on the HTTP/2 preface") from exc
            raise
        self._wrote = True


class PinnedConnection(httpcore.AsyncConnectionInterface):
    """One pooled connection to the endpoint's origin, HTTP/1.1 or HTTP/2."""

    def __init__(
        self,
        origin: httpcore.Origin,
        *,
        network_backend: httpcore.AsyncNetworkBackend,
        ssl_context: ssl.SSLContext | None,
        http1: bool,
        http2: bool,
        keepalive_expiry: float | None,
        on_reset: Callable[[], None] | None = None,
    ) -> None:
        self._origin = origin
        self._on_reset = on_reset
        self._backend = network_backend
        self._ssl_context = ssl_context
        self._http1 = http1
        self._http2 = http2
        self._keepalive_expiry = keepalive_expiry
        self._connection: httpcore.AsyncConnectionInterface | None = None
        self._connect_failed = False
        #: what the connection speaks once connected: ``http/1.1``, ``h2`` or ``h2c``
        self.protocol = ""

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        """Connect on first use, then hand the request to the protocol connection."""
        if self._connection is None:
            try:
                self._connection = await self._connect(request)
            except BaseException:
                self._connect_failed = True
                raise
        return await self._connection.handle_async_request(request)

    async def _connect(self, request: httpcore.Request) -> httpcore.AsyncConnectionInterface:
        timeouts = request.extensions.get("timeout", {})
        timeout = timeouts.get("connect")
        host = self._origin.host.decode("ascii")
        stream = await self._backend.connect_tcp(host, self._origin.port, timeout=timeout)
        try:
            if self._origin.scheme == b"https":
                context = self._ssl_context or httpcore.default_ssl_context()
                stream = await stream.start_tls(
                    context, server_hostname=host.strip("[]"), timeout=timeout
                )
        except BaseException:
            await stream.aclose()
            raise
        ssl_object = stream.get_extra_info("ssl_object")
        alpn = ssl_object.selected_alpn_protocol() if ssl_object is not None else None
        negotiated_h2 = alpn == "h2"
        if ssl_object is not None and not negotiated_h2 and not self._http1:
            await stream.aclose()
            raise ProtocolRejected(
                f"{host} does not speak HTTP/2 (TLS negotiated {alpn or 'no protocol'}): "
                "set transport.http2 to auto"
            )
        if negotiated_h2 or (self._http2 and not self._http1 and ssl_object is None):
            self.protocol = "h2" if negotiated_h2 else "h2c"
            if not negotiated_h2:
                stream = PriorKnowledgeStream(stream, host)
            return StreamResettingHTTP2Connection(
                origin=self._origin,
                stream=stream,
                keepalive_expiry=self._keepalive_expiry,
                write_timeout=timeouts.get("write"),
                on_reset=self._on_reset,
            )
        self.protocol = "http/1.1"
        return httpcore.AsyncHTTP11Connection(
            origin=self._origin, stream=stream, keepalive_expiry=self._keepalive_expiry
        )

    def can_handle_request(self, origin: httpcore.Origin) -> bool:
        """Only the endpoint's origin."""
        return origin == self._origin

    async def aclose(self) -> None:
        """Close the socket."""
        if self._connection is not None:
            await self._connection.aclose()

    def is_available(self) -> bool:
        """Whether another request may be sent now (HTTP/2: before connecting, too)."""
        if self._connection is None:
            could_be_h2 = self._http2 and (self._origin.scheme == b"https" or not self._http1)
            return could_be_h2 and not self._connect_failed
        return self._connection.is_available()

    def has_expired(self) -> bool:
        """Idle past keep-alive expiry, or failed to connect."""
        if self._connection is None:
            return self._connect_failed
        return self._connection.has_expired()

    def is_idle(self) -> bool:
        """No request in flight."""
        if self._connection is None:
            return self._connect_failed
        return self._connection.is_idle()

    def is_closed(self) -> bool:
        """Closed or never connected because connecting failed."""
        if self._connection is None:
            return self._connect_failed
        return self._connection.is_closed()

    def info(self) -> str:
        """A short state description for the pool's repr."""
        if self._connection is None:
            return "CONNECTION FAILED" if self._connect_failed else "CONNECTING"
        return self._connection.info()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} [{self.info()}]>"

"""The connection pool as an httpx transport, with pre-connect and keep-warm.

``PinnedTransport`` implements the public ``httpx.AsyncBaseTransport`` over
an ``httpcore.AsyncConnectionPool`` whose connections are
``network.PinnedConnection`` objects (pinned addresses, RST_STREAM on
abandoned HTTP/2 streams). httpcore's exceptions are mapped here, at the
boundary, to ``transport.errors``; whether a failure happened before any
byte of the response arrived (``ConnectError``: safe to retry) or in the
middle of the body (``StreamResetError``) is decided by where it was raised.

When only HTTP/1.1 may be spoken, ``transport.http1_pool.Http1Pool`` takes
the place of httpcore's pool: kept-alive connections with a spare always
connected, replaced in the background when one is cancelled or closed.

``ConnectionWarmer`` opens the connection before the first completion needs
it and keeps it open across idle periods: after ``keep_warm_seconds`` without
traffic it sends one cheap GET, but only while the backend is in use (a real
request within the last ``active_window`` seconds), so an editor left open
overnight does not ping the service forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterator

import httpcore
import httpx

from transport import errors
from transport.http1_pool import DEFAULT_SPARES, Http1Pool
from transport.network import PinnedConnection, PinnedResolverBackend
from transport.tasks import stop_tasks

logger = logging.getLogger(__name__)

DEFAULT_ACTIVE_WINDOW = 600.0


def _ssl_failure(exc: BaseException) -> ssl.SSLError | None:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


@contextlib.contextmanager
def map_errors(host: str, *, body: bool) -> Iterator[None]:
    """Translate httpcore/ssl/OS errors into ``transport.errors``.

    ``body`` says whether response bytes may already have arrived: a broken
    connection before that is a ``ConnectError`` (retryable), after it a
    ``StreamResetError``.
    """
    try:
        yield
    except errors.TransportError:
        raise
    except httpcore.TimeoutException as exc:
        raise errors.UpstreamTimeout(f"{type(exc).__name__} talking to {host}") from exc
    except (httpcore.NetworkError, httpcore.RemoteProtocolError, OSError) as exc:
        failure = _ssl_failure(exc)
        if failure is not None:
            reason = getattr(failure, "reason", None) or type(failure).__name__
            hint = ""
            if isinstance(failure, ssl.SSLCertVerificationError):
                hint = "; trust the service's CA with transport.caFile"
            raise errors.TLSError(f"TLS with {host} failed: {reason}{hint}") from exc
        if body:
            raise errors.StreamResetError(f"connection to {host} broke mid-response") from exc
        reason = str(exc) or type(exc).__name__
        raise errors.ConnectError(f"cannot reach {host}: {reason}") from exc
    except httpcore.ProtocolError as exc:
        raise errors.UpstreamProtocolError(f"HTTP protocol error with {host}") from exc
    except httpcore.UnsupportedProtocol as exc:
        raise errors.ConfigurationError(str(exc)) from exc
    except Exception as exc:
        # The HTTP client's own state went wrong (an httpcore bug): this request
        # failed, the server carries on.
        logger.warning("the HTTP client failed talking to %s", host, exc_info=True)
        raise errors.UpstreamProtocolError(
            f"HTTP client failure with {host} ({type(exc).__name__}: {exc})"
        ) from exc


class PinnedConnectionPool(httpcore.AsyncConnectionPool):
    """httpcore's pool, creating ``PinnedConnection`` objects."""

    def __init__(
        self,
        *,
        network_backend: PinnedResolverBackend,
        ssl_context: ssl.SSLContext | None,
        http1: bool,
        http2: bool,
        max_connections: int,
        max_keepalive_connections: int,
        keepalive_expiry: float | None,
        on_reset: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(
            ssl_context=ssl_context,
            max_connections=max_connections,
            max_keepalive_connections=max_keepalive_connections,
            keepalive_expiry=keepalive_expiry,
            http1=http1,
            http2=http2,
            network_backend=network_backend,
        )
        self._pinned = (network_backend, ssl_context, http1, http2, keepalive_expiry)
        self._on_reset = on_reset

    def create_connection(self, origin: httpcore.Origin) -> httpcore.AsyncConnectionInterface:
        """A new pinned connection for ``origin``."""
        backend, context, http1, http2, expiry = self._pinned
        return PinnedConnection(
            origin,
            network_backend=backend,
            ssl_context=context,
            http1=http1,
            http2=http2,
            keepalive_expiry=expiry,
            on_reset=self._on_reset,
        )


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: httpcore.Response, host: str) -> None:
        self._response = stream
        self._host = host

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with map_errors(self._host, body=True):
            async for part in self._response.aiter_stream():
                yield part

    async def aclose(self) -> None:
        with map_errors(self._host, body=True):
            await self._response.aclose()


class PinnedTransport(httpx.AsyncBaseTransport):
    """An httpx transport over a pool of pinned, preferably HTTP/2, connections."""

    def __init__(
        self,
        *,
        backend: PinnedResolverBackend,
        ssl_context: ssl.SSLContext | None,
        http1: bool = True,
        http2: bool = True,
        max_connections: int = 12,
        max_keepalive: int = 8,
        keepalive_expiry: float | None = 120.0,
        origin: httpcore.Origin | None = None,
        connect_timeout: float | None = 3.0,
        spares: int = DEFAULT_SPARES,
    ) -> None:
        self.backend = backend
        #: HTTP/2 streams reset by us because the caller stopped reading
        self.streams_reset = 0
        #: HTTP/1.1 only (and the origin known): our keep-alive pool with spares
        self.http1: Http1Pool | None = None
        self._pool: httpcore.AsyncConnectionPool | Http1Pool
        self._origin = origin
        self._http1_settings = (ssl_context, max_connections, keepalive_expiry, connect_timeout)
        self._spares = spares
        #: over TLS with both offered: switch to the HTTP/1.1 pool once ALPN picks it
        self._may_learn_http1 = origin is not None and http1 and http2
        #: pools replaced by the HTTP/1.1 one, closed with the transport
        self._replaced: list[httpcore.AsyncConnectionPool] = []
        if origin is not None and http1 and not http2:
            self.http1 = self._pool = self._new_http1_pool()
        else:
            self._pool = PinnedConnectionPool(
                network_backend=backend,
                ssl_context=ssl_context,
                http1=http1,
                http2=http2,
                max_connections=max_connections,
                max_keepalive_connections=max_keepalive,
                keepalive_expiry=keepalive_expiry,
                on_reset=self._count_reset,
            )

    def _new_http1_pool(self) -> Http1Pool:
        assert self._origin is not None
        ssl_context, max_connections, keepalive_expiry, connect_timeout = self._http1_settings
        return Http1Pool(
            self._origin,
            network_backend=self.backend,
            ssl_context=ssl_context,
            max_connections=max_connections,
            keepalive_expiry=keepalive_expiry,
            connect_timeout=connect_timeout,
            spares=self._spares,
        )

    def _count_reset(self) -> None:
        self.streams_reset += 1

    @property
    def connections(self) -> list[httpcore.AsyncConnectionInterface]:
        """The pool's current connections."""
        return list(self._pool.connections)

    @property
    def protocol(self) -> str:
        """What the connections actually speak: ``http/1.1``, ``h2``, ``h2c``, or ``""``."""
        if self.http1 is not None:
            return "http/1.1"
        for connection in self._pool.connections:
            spoken = getattr(connection, "protocol", "")
            if spoken:
                self._protocol = spoken
        return self._protocol

    _protocol = ""

    def prepare(self) -> None:
        """Start keeping connections ready ahead of requests (HTTP/1.1 pool)."""
        self._learn_protocol()
        if self.http1 is not None:
            self.http1.prepare()

    def _learn_protocol(self) -> None:
        """The server picked http/1.1 in ALPN: from now on, the HTTP/1.1 pool serves."""
        if not self._may_learn_http1 or self.http1 is not None:
            return
        if self.protocol != "http/1.1":
            return
        assert isinstance(self._pool, httpcore.AsyncConnectionPool)
        self._replaced.append(self._pool)
        self.http1 = self._pool = self._new_http1_pool()
        logger.info("the service chose HTTP/1.1: keeping spare connections ready")

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the pool; errors come out as ``transport.errors``."""
        assert isinstance(request.stream, httpx.AsyncByteStream)
        host = request.url.host
        if request.url.port is not None:
            host = f"{host}:{request.url.port}"
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with map_errors(host, body=False):
            response = await self._pool.handle_async_request(core_request)
        self._learn_protocol()
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response, host),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        """Close every connection."""
        for pool in self._replaced:
            await pool.aclose()
        await self._pool.aclose()

    def __repr__(self) -> str:
        if self.http1 is not None:
            return f"<PinnedTransport opened={self.backend.connections_opened} {self.http1!r}>"
        conns = ", ".join(c.info() for c in self._pool.connections) or "no connections"
        return (
            f"<PinnedTransport opened={self.backend.connections_opened} "
            f"streams_reset={self.streams_reset} [{conns}]>"
        )


class ConnectionWarmer:
    """Pre-connects at start and keeps the connection warm while in use."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        probe_url: str,
        *,
        keep_warm_seconds: float,
        active_window: float = DEFAULT_ACTIVE_WINDOW,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        #: the cheap GET; changes when the service is identified
        self.probe_url = probe_url
        #: named in log lines
        self._where = httpx.URL(probe_url).netloc.decode("ascii")
        self._keep_warm = keep_warm_seconds
        self._active_window = active_window
        self._clock = clock
        self._last_traffic = clock()
        self._last_use = float("-inf")
        self._task: asyncio.Task[None] | None = None

    def touch(self) -> None:
        """Record a real request (traffic that keeps the connection warm by itself)."""
        self._last_traffic = self._last_use = self._clock()

    async def preconnect(self) -> bool:
        """Open the connection now with one cheap GET; any HTTP status will do."""
        try:
            response = await self._client.get(self.probe_url)
            await response.aclose()
        except errors.TransportError as exc:
            logger.info("pre-connect to %s failed: %s", self._where, exc)
            return False
        finally:
            self._last_traffic = self._clock()
        return True

    def due(self) -> bool:
        """Whether a keep-warm probe should go out now."""
        now = self._clock()
        idle = now - self._last_traffic
        in_use = now - self._last_use <= self._active_window
        return self._keep_warm > 0 and in_use and idle >= self._keep_warm

    def start(self) -> None:
        """Run the keep-warm loop in the background."""
        if self._keep_warm > 0 and self._task is None:
            self._task = asyncio.create_task(self._run(), name="scopecache-keep-warm")

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(max(0.05, self._keep_warm / 4))
            if self.due():
                await self.preconnect()

    async def aclose(self) -> None:
        """Stop the keep-warm loop."""
        if self._task is not None:
            await stop_tasks(self._task)
            self._task = None

"""HTTP/1.1 as a first-class path: a keep-alive pool that always has a connection ready.

Self-hosted inference servers (llama.cpp's ``llama-server``, vLLM, Ollama)
speak HTTP/1.1 only, one request per connection at a time. ``llama-server``
even closes the connection after every streamed response, and on HTTP/1.1
the only way to cancel a generation is to close its connection. So a pool
that opened connections on demand would make most completions wait for a
TCP (or TLS) connect. ``Http1Pool`` keeps at least ``spares`` idle
connections connected ahead of need while the backend is in use, and opens
replacements in the background the moment one is taken, cancelled or
closed by the server:

- a request takes a ready idle connection; it waits for a connect only when
  none is ready (counted in ``connect_waits``, which tests assert on);
- a response closed before its end (a cancelled stream) closes the
  connection, so the server stops generating; a replacement opens at once;
- ``Keep-Alive: timeout=N, max=M`` is honoured: a connection is retired a
  margin before the server would drop it, and never used after that;
- a server that closes after every streamed response is noticed (its
  connections turn readable right after the stream), after which a
  connection that carried a stream is never counted as a spare;
- a request that fails on a connection that sat idle (reused, or a spare)
  before any byte of the response arrived is retried once on another
  connection (the server dropped an idle connection just as we sent); any
  other failure is raised.

The pool answers ``handle_async_request`` like httpcore's own pool, over
``httpcore.AsyncHTTP11Connection`` objects and an
``httpcore.AsyncNetworkBackend``; tests drive it with a real loopback server
or with httpcore's ``AsyncMockBackend``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import ssl
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import httpcore

from transport.network import WrappedStream
from transport.tasks import stop_tasks

logger = logging.getLogger(__name__)

#: idle connections kept connected ahead of need
DEFAULT_SPARES = 1
#: a connection is retired this long before the server's announced keep-alive
#: timeout (and never less than this fraction of it)
KEEP_ALIVE_MARGIN = 1.0
KEEP_ALIVE_MARGIN_FRACTION = 0.2
#: spares are kept only while the pool was used within this many seconds
DEFAULT_ACTIVE_WINDOW = 600.0
#: after a streamed response, look this much later whether the server closed
#: the connection (llama-server does, right after the last chunk)
CLOSE_PROBE_DELAY = 0.1
#: streamed responses whose connection stayed open before we stop probing
CLOSE_PROBES = 3

_PARAM = re.compile(r"\s*([A-Za-z-]+)\s*=\s*\"?([0-9.]+)\"?\s*")


@dataclass(frozen=True)
class KeepAlive:
    """What a ``Keep-Alive`` response header announces."""

    #: seconds the server keeps an idle connection open
    timeout: float | None = None
    #: requests the server still serves on this connection
    max: int | None = None


def parse_keep_alive(value: str | bytes | None) -> KeepAlive:
    """Parse ``Keep-Alive: timeout=5, max=100``; unknown or malformed parts are ignored."""
    if value is None:
        return KeepAlive()
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    timeout: float | None = None
    most: int | None = None
    for part in text.split(","):
        match = _PARAM.fullmatch(part)
        if match is None:
            continue
        name, number = match.group(1).lower(), match.group(2)
        try:
            if name == "timeout":
                timeout = float(number)
            elif name == "max":
                most = int(float(number))
        except ValueError:
            continue
    return KeepAlive(timeout=timeout, max=most)


def idle_lifetime(keep_alive: KeepAlive, expiry: float | None) -> float | None:
    """Seconds an idle connection may be used: our expiry, cut short before the server's."""
    limits = [expiry] if expiry is not None else []
    if keep_alive.timeout is not None:
        margin = max(KEEP_ALIVE_MARGIN, keep_alive.timeout * KEEP_ALIVE_MARGIN_FRACTION)
        limits.append(max(0.0, keep_alive.timeout - margin))
    return min(limits) if limits else None


@dataclass(kw_only=True)
class Http1Counters:
    """What the pool did with its connections."""

    #: requests sent on a connection that had served a response before
    reused: int = 0
    #: connections closed because a response was abandoned (a cancelled stream)
    closed_by_cancel: int = 0
    #: connections the server closed (after a stream, idle timeout, ``Connection: close``)
    closed_by_server: int = 0
    #: connections we closed before the server's keep-alive timeout would drop them
    retired: int = 0
    #: requests that had to wait for a connect because no connection was ready
    connect_waits: int = 0
    #: requests retried on another connection after a reused one failed before any byte
    stale_retries: int = 0


class _CountingStream(WrappedStream):
    """A network stream that counts the bytes read (to tell "nothing arrived")."""

    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        super().__init__(stream)
        self.bytes_read = 0

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self._stream.read(max_bytes, timeout)
        self.bytes_read += len(data)
        return data


class _Slot:
    """One pooled connection and what the pool knows about it."""

    def __init__(
        self, connection: httpcore.AsyncHTTP11Connection, stream: _CountingStream, *, tls: bool
    ) -> None:
        self.connection = connection
        self.stream = stream
        self.tls = tls
        #: opened ahead of need: it sat idle, so the server may have dropped it
        self.ahead = False
        self.served = 0
        self.busy = False
        #: monotonic time after which the connection is not used any more
        self.usable_until: float | None = None
        #: requests the server still allows on it
        self.remaining: int | None = None
        #: its last response was streamed (a server may close after those)
        self.streamed = False

    def server_closed(self) -> bool:
        """Whether the server hung up (an idle socket that turns readable is at EOF)."""
        if self.connection.is_closed():
            return True
        if self.tls and self.served == 0:
            # TLS 1.3 session tickets arrive after the handshake and sit unread
            # until the first response: readable does not mean closed yet.
            return False
        return bool(self.stream.get_extra_info("is_readable"))

    def info(self) -> str:
        return f"{self.connection.info()}, served {self.served}"


class _TrackedBody:
    """The response body; tells the pool on close whether it was read to the end."""

    def __init__(self, pool: Http1Pool, slot: _Slot, response: httpcore.Response) -> None:
        self._pool = pool
        self._slot = slot
        self._response = response
        self._complete = False
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.aiter_stream():
            yield chunk
        self._complete = True

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._response.aclose()
        finally:
            self._pool._released(self._slot, self._response, complete=self._complete)


class Http1Pool:
    """Keep-alive HTTP/1.1 connections to one origin, with spares connected ahead."""

    def __init__(
        self,
        origin: httpcore.Origin,
        *,
        network_backend: httpcore.AsyncNetworkBackend,
        ssl_context: ssl.SSLContext | None = None,
        max_connections: int = 12,
        keepalive_expiry: float | None = 120.0,
        connect_timeout: float | None = 3.0,
        spares: int = DEFAULT_SPARES,
        active_window: float = DEFAULT_ACTIVE_WINDOW,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.origin = origin
        self._backend = network_backend
        self._ssl_context = ssl_context
        self._max = max(1, max_connections)
        self._expiry = keepalive_expiry
        self._connect_timeout = connect_timeout
        self._spares = max(0, min(spares, self._max))
        self._active_window = active_window
        self._clock = clock
        self._host = origin.host.decode("ascii")
        self._slots: list[_Slot] = []
        self._connecting = 0
        self._changed: asyncio.Condition | None = None
        self._wake: asyncio.Event | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._probes: set[asyncio.Task[None]] = set()
        self._last_use = clock()
        self._closed = False
        #: learned: the server closes the connection after each streamed response
        self.closes_after_stream: bool | None = None
        self._streams_kept_open = 0
        #: the idle timeout the server announced last (applies to spares, too)
        self._server_keep_alive = KeepAlive()
        self.counters = Http1Counters()

    # -- state -----------------------------------------------------------------

    @property
    def connections(self) -> list[httpcore.AsyncHTTP11Connection]:
        """The pool's current connections."""
        return [slot.connection for slot in self._slots]

    def in_use(self) -> int:
        """Connections carrying a request now (the rest are idle, connected or not yet used)."""
        return sum(1 for slot in self._slots if slot.busy)

    def ready(self) -> int:
        """Idle connections a request could take now without a connect."""
        now = self._clock()
        return sum(1 for slot in self._slots if self._is_spare(slot, now))

    def _usable(self, slot: _Slot, now: float) -> bool:
        if slot.busy:
            return False
        if slot.usable_until is not None and now >= slot.usable_until:
            return False
        return slot.remaining is None or slot.remaining > 0

    def _is_spare(self, slot: _Slot, now: float) -> bool:
        # On a server that closes after each stream, a connection that just
        # carried one is about to go: it is no spare.
        doomed = slot.streamed and self.closes_after_stream is True
        return self._usable(slot, now) and not doomed and not slot.server_closed()

    # -- requests --------------------------------------------------------------

    async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
        """Send ``request`` on a ready connection (see the module docstring)."""
        if self._closed:
            raise httpcore.ConnectError(f"the connection pool for {self._host} is closed")
        self._start()
        self._last_use = self._clock()
        timeouts = request.extensions.get("timeout", {})
        retried = False
        while True:
            slot = await self._acquire(timeouts.get("pool"), timeouts.get("connect"))
            reused = slot.served > 0
            if reused:
                self.counters.reused += 1
            idled = reused or slot.ahead
            before = slot.stream.bytes_read
            try:
                response = await slot.connection.handle_async_request(request)
            except BaseException as exc:
                nothing_arrived = slot.stream.bytes_read == before
                await self._discard(slot)
                stale = isinstance(exc, httpcore.NetworkError | httpcore.RemoteProtocolError)
                if stale and idled and nothing_arrived:
                    self.counters.closed_by_server += 1
                    if not retried:
                        # The server dropped an idle connection as we sent: no
                        # byte of an answer came, so the request can go again.
                        retried = True
                        self.counters.stale_retries += 1
                        logger.debug("%s closed a kept-alive connection; retrying", self._host)
                        continue
                raise
            body = _TrackedBody(self, slot, response)
            return httpcore.Response(
                status=response.status,
                headers=response.headers,
                content=body,
                extensions=response.extensions,
            )

    async def _acquire(self, pool_timeout: float | None, connect_timeout: float | None) -> _Slot:
        changed = self._condition()
        deadline = None if pool_timeout is None else self._clock() + pool_timeout
        async with changed:
            while True:
                slot = self._take()
                if slot is not None:
                    slot.busy = True
                    self._kick()
                    return slot
                if len(self._slots) + self._connecting < self._max:
                    break
                remaining = None if deadline is None else deadline - self._clock()
                if remaining is not None and remaining <= 0:
                    raise httpcore.PoolTimeout(f"no free connection to {self._host}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), remaining)
            self._connecting += 1
        self.counters.connect_waits += 1
        try:
            slot = await self._open(connect_timeout)
        finally:
            self._connecting -= 1
        slot.busy = True
        self._slots.append(slot)
        self._kick()
        return slot

    def _take(self) -> _Slot | None:
        """The best ready idle connection, closing the ones that went stale on the way."""
        now = self._clock()
        candidates: list[_Slot] = []
        for slot in list(self._slots):
            if slot.busy:
                continue
            if slot.server_closed():
                self._lost(slot)
                continue
            if not self._usable(slot, now):
                self._retire(slot)
                continue
            candidates.append(slot)
        if not candidates:
            return None
        # A connection that never carried a stream first (a server may close
        # after streams), the oldest of those (nearest its idle timeout); else
        # the most recently used.
        fresh = [slot for slot in candidates if not slot.streamed]
        return fresh[0] if fresh else candidates[-1]

    def _released(self, slot: _Slot, response: httpcore.Response, *, complete: bool) -> None:
        """A response was closed: keep its connection, or count why it went."""
        slot.busy = False
        if not complete:
            # httpcore closes an HTTP/1.1 connection whose response was not read
            # to the end: the server sees the disconnect and stops generating.
            self.counters.closed_by_cancel += 1
            self._forget(slot)
        elif slot.connection.is_closed():
            self.counters.closed_by_server += 1  # "Connection: close"
            self._forget(slot)
        else:
            slot.served += 1
            keep_alive = parse_keep_alive(_header(response, b"keep-alive"))
            if keep_alive.timeout is not None:
                self._server_keep_alive = KeepAlive(timeout=keep_alive.timeout)
            lifetime = idle_lifetime(keep_alive, self._expiry)
            slot.usable_until = None if lifetime is None else self._clock() + lifetime
            if keep_alive.max is not None:
                slot.remaining = keep_alive.max - 1
            slot.streamed = _header(response, b"content-length") is None
            if slot.streamed and self.closes_after_stream is not False:
                self._probe_close(slot)
        self._notify()
        self._kick()

    # -- connections -----------------------------------------------------------

    async def _open(self, timeout: float | None) -> _Slot:
        timeout = self._connect_timeout if timeout is None else timeout
        raw = await self._backend.connect_tcp(self._host, self.origin.port, timeout=timeout)
        try:
            if self.origin.scheme == b"https":
                context = self._ssl_context or httpcore.default_ssl_context()
                raw = await raw.start_tls(
                    context, server_hostname=self._host.strip("[]"), timeout=timeout
                )
        except BaseException:
            await raw.aclose()
            raise
        ssl_object = raw.get_extra_info("ssl_object")
        if ssl_object is not None and ssl_object.selected_alpn_protocol() == "h2":
            # The server chose HTTP/1.1 before; this pool cannot speak h2.
            await raw.aclose()
            raise httpcore.ConnectError(f"{self._host} switched to HTTP/2 mid-session")
        stream = _CountingStream(raw)
        connection = httpcore.AsyncHTTP11Connection(origin=self.origin, stream=stream)
        slot = _Slot(connection, stream, tls=ssl_object is not None)
        # The server's idle timeout runs from now, before the first request.
        lifetime = idle_lifetime(self._server_keep_alive, self._expiry)
        slot.usable_until = None if lifetime is None else self._clock() + lifetime
        return slot

    def _lost(self, slot: _Slot) -> None:
        """The server closed an idle connection."""
        self.counters.closed_by_server += 1
        if slot.streamed and self.closes_after_stream is None:
            self._learned_closes_after_stream()
        self._drop(slot)

    def _retire(self, slot: _Slot) -> None:
        """Close an idle connection before the server's keep-alive timeout does."""
        self.counters.retired += 1
        self._drop(slot)

    def _drop(self, slot: _Slot) -> None:
        self._forget(slot)
        task = asyncio.ensure_future(slot.connection.aclose())
        self._probes.add(task)
        task.add_done_callback(self._probes.discard)

    def _forget(self, slot: _Slot) -> None:
        with contextlib.suppress(ValueError):
            self._slots.remove(slot)

    async def _discard(self, slot: _Slot) -> None:
        self._forget(slot)
        with contextlib.suppress(Exception):
            await slot.connection.aclose()
        self._notify()
        self._kick()

    def _learned_closes_after_stream(self) -> None:
        self.closes_after_stream = True
        logger.info(
            "%s closes the connection after each streamed response; keeping a spare ready",
            self._host,
        )

    def _probe_close(self, slot: _Slot) -> None:
        """Look shortly after a stream whether the server closed its connection.

        Until the pool knows whether the server closes after streams, this
        finds out; once it knows it does, this closes (and counts) each such
        connection soon after it went, instead of at the next request.
        """

        async def probe() -> None:
            await asyncio.sleep(CLOSE_PROBE_DELAY)
            if slot not in self._slots or slot.busy:
                return
            if slot.server_closed():
                self._lost(slot)
                self._kick()
                return
            if self.closes_after_stream is not None:
                return
            self._streams_kept_open += 1
            if self._streams_kept_open >= CLOSE_PROBES:
                self.closes_after_stream = False

        task = asyncio.ensure_future(probe())
        self._probes.add(task)
        task.add_done_callback(self._probes.discard)

    # -- the spare keeper ------------------------------------------------------

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    def _notify(self) -> None:
        changed = self._condition()

        async def notify() -> None:
            async with changed:
                changed.notify_all()

        task = asyncio.ensure_future(notify())
        self._probes.add(task)
        task.add_done_callback(self._probes.discard)

    def _kick(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _start(self) -> None:
        if self._keeper is None and self._spares > 0 and not self._closed:
            self._wake = asyncio.Event()
            self._keeper = asyncio.create_task(self._keep(), name="scopecache-http1-spares")

    def prepare(self) -> None:
        """Start keeping spares now (before the first request)."""
        self._last_use = self._clock()
        self._start()
        self._kick()

    def _next_expiry(self) -> float | None:
        ends = [s.usable_until for s in self._slots if not s.busy and s.usable_until is not None]
        return None if not ends else max(0.0, min(ends) - self._clock())

    async def _keep(self) -> None:
        assert self._wake is not None
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), self._next_expiry())
            except TimeoutError:
                pass
            self._wake.clear()
            self._sweep()
            if self._clock() - self._last_use > self._active_window:
                continue  # not in use: let the connections go
            while (
                self.ready() < self._spares
                and len(self._slots) + self._connecting < self._max
                and not self._closed
            ):
                self._connecting += 1
                try:
                    slot = await self._open(self._connect_timeout)
                except Exception as exc:  # noqa: BLE001 - any failure: wait for the next request
                    logger.info("opening a spare connection to %s failed: %s", self._host, exc)
                    break
                finally:
                    self._connecting -= 1
                slot.ahead = True
                self._slots.append(slot)
                self._notify()

    def _sweep(self) -> None:
        """Close idle connections that the server closed or is about to drop."""
        now = self._clock()
        for slot in list(self._slots):
            if slot.busy:
                continue
            if slot.server_closed():
                self._lost(slot)
            elif not self._usable(slot, now):
                self._retire(slot)

    async def aclose(self) -> None:
        """Stop the keeper and close every connection."""
        self._closed = True
        tasks = [t for t in (self._keeper, *self._probes) if t is not None]
        self._keeper = None
        if tasks:
            await stop_tasks(*tasks)
        for slot in list(self._slots):
            with contextlib.suppress(Exception):
                await slot.connection.aclose()
        self._slots.clear()

    def __repr__(self) -> str:
        conns = ", ".join(slot.info() for slot in self._slots) or "no connections"
        return f"<Http1Pool {self._host}:{self.origin.port} ready={self.ready()} [{conns}]>"


def _header(response: httpcore.Response, name: bytes) -> bytes | None:
    for key, value in response.headers:
        if key.lower() == name:
            return value
    return None

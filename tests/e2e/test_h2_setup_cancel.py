"""A request cancelled while httpcore sets its HTTP/2 connection up, against the real service.

httpcore sets a connection up inside its first request: it writes the
preface, then takes 99 of the 100 permits of its stream-count semaphore one
``await`` at a time, and gives them back when the server's SETTINGS raise
the limit. A cancellation between those steps (the editor moved on while a
new connection opened) leaves the semaphore with permits it never took;
the next request on that connection then fails with ``ValueError:
semaphore released too many times``. ``StreamResettingHTTP2Connection``
lets the set-up finish whatever happens to the request that started it.

The cancellation is placed exactly: the network backend (``PinnedResolverBackend``
takes the backend it delegates to) cancels the request's task when the
connection's first write after TLS, the HTTP/2 preface, returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx
import pytest

from tests.support.reference import ReferenceService
from transport.network import PinnedResolverBackend, WrappedStream, tls_context
from transport.pool import PinnedTransport

pytestmark = pytest.mark.e2e

BODY = {"model": "m", "prompt": "def greet(name):\n    ", "max_tokens": 8}


class CancelOnPreface(WrappedStream):
    """Cancels the request's task when the first write after TLS (the preface) returns."""

    def __init__(self, stream: httpcore.AsyncNetworkStream, backend: CancellingBackend,
                 tls: bool) -> None:
        super().__init__(stream)
        self._backend = backend
        self._tls = tls

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await super().write(buffer, timeout)
        target = self._backend.target
        if self._tls and target is not None:
            self._backend.target = None
            target.cancel()

    async def start_tls(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        return CancelOnPreface(await super().start_tls(*args, **kwargs), self._backend, tls=True)


class CancellingBackend(httpcore.AsyncNetworkBackend):
    """httpcore's own backend, its streams wrapped in ``CancelOnPreface``."""

    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()
        #: the task cancelled at the next preface (once)
        self.target: asyncio.Future[Any] | None = None

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address,
            socket_options=socket_options,
        )
        return CancelOnPreface(stream, self, tls=False)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


async def test_a_request_cancelled_during_http2_setup_leaves_the_connection_usable(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    network = CancellingBackend()
    pinned = PinnedResolverBackend(backend=network)
    transport = PinnedTransport(
        backend=pinned,
        ssl_context=tls_context(ca_file=str(svc.ca_file), verify=True, http2=True),
    )
    async with httpx.AsyncClient(transport=transport, timeout=10.0) as client:
        first = asyncio.ensure_future(client.post(svc.url + "/completions", json=BODY))
        network.target = first
        with pytest.raises(asyncio.CancelledError):
            await first
        assert network.target is None  # the cancellation came at the preface
        answers = [await client.post(svc.url + "/completions", json=BODY) for _ in range(3)]
        assert [a.status_code for a in answers] == [200, 200, 200]
        assert all(a.http_version == "HTTP/2" for a in answers)
        assert pinned.connections_opened == 1  # on the connection the cancelled request opened

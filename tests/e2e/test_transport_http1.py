"""The HTTP backend over HTTP/1.1 against a server that behaves like llama-server.

The reference service runs ``--http1-only --close-after-stream`` on cleartext
127.0.0.1: it rejects the HTTP/2 preface and closes the TCP connection after
every streamed response. "Waits for no connect" is asserted with counters on
both sides: the backend's ``connect_waits`` and the id of the connection the
service saw the request on (ids count accepted connections, so an id no
higher than the newest one before the request means the connection was open
before the request was sent).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable, Iterator

import pytest

from tests.support.backend import REQUEST, cancel_task_mid_stream, complete, started_backend
from tests.support.reference import ReferenceService
from transport.errors import ProtocolRejected
from transport.http import HttpCompletionBackend
from transport.options import EndpointOptions
from transport.pool import PinnedTransport

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def llama_like() -> Iterator[ReferenceService]:
    args = ["--http1-only", "--close-after-stream", "--keep-alive-timeout", "5"]
    with ReferenceService(tls=False, extra_args=args) as service:
        yield service


@pytest.fixture
def svc(llama_like: ReferenceService) -> ReferenceService:
    llama_like.reset()
    return llama_like


async def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


def spare_ready(backend: HttpCompletionBackend) -> Callable[[], bool]:
    return lambda: backend.counters().connections_ready >= 1


async def complete_without_connect(backend: HttpCompletionBackend, svc: ReferenceService) -> str:
    """One completion that must ride a connection opened before it was sent."""
    await eventually(spare_ready(backend))
    waits = backend.counters().connect_waits
    accepted = svc.stats()["lastConnection"]
    answer = await complete(backend)
    assert backend.counters().connect_waits == waits
    assert svc.stats()["recent"][-1]["connection"] <= accepted
    return answer


@pytest.mark.parametrize("path", ["", "/v1"])
async def test_defaults_speak_http1_to_a_plain_http_endpoint(
    svc: ReferenceService, path: str
) -> None:
    options = EndpointOptions(endpoint=svc.base + path, keep_warm_seconds=0)
    async with started_backend(options) as backend:
        answers = [await complete(backend) for _ in range(3)]
        assert all(answers)
        counters = backend.counters()
        assert counters.protocol == "http/1.1"
        assert counters.errors == 0
    stats = svc.stats()
    assert stats["httpVersions"] == {"1.1": 3}
    assert stats["h2PrefacesRejected"] == 0


async def test_the_completion_after_a_closed_after_stream_response_waits_for_no_connect(
    svc: ReferenceService,
) -> None:
    options = EndpointOptions(endpoint=svc.url, keep_warm_seconds=0)
    async with started_backend(options) as backend:
        assert await complete(backend)
        await eventually(lambda: svc.stats()["connectionsClosedAfterStream"] == 1)
        for _ in range(3):
            assert await complete_without_connect(backend, svc)
        # each closed connection is noticed (and counted) soon after its stream
        await eventually(lambda: backend.counters().connections_closed_by_server == 4)
        counters = backend.counters()
        assert counters.errors == 0 and counters.retries == 0
    assert svc.stats()["connectionsClosedAfterStream"] == 4


async def test_cancel_mid_stream_closes_the_http1_connection_and_the_server_stops(
    svc: ReferenceService,
) -> None:
    options = EndpointOptions(endpoint=svc.url, keep_warm_seconds=0)
    async with started_backend(options) as backend:
        svc.set_fault("never-ending", 1, interval=0.02)
        stream = backend.stream(REQUEST)
        assert isinstance(stream, AsyncGenerator)
        assert await anext(stream)
        await stream.aclose()
        await eventually(lambda: svc.stats()["streamsCancelled"] == 1)
        counters = backend.counters()
        assert counters.connections_closed_by_cancel == 1 and counters.cancelled == 1
        assert await complete_without_connect(backend, svc)


async def test_the_next_completion_after_a_cancelled_task_waits_for_no_connect(
    svc: ReferenceService,
) -> None:
    options = EndpointOptions(endpoint=svc.url, keep_warm_seconds=0)
    async with started_backend(options) as backend:
        svc.set_fault("never-ending", 1, interval=0.02)
        await cancel_task_mid_stream(backend)
        await eventually(lambda: svc.stats()["streamsCancelled"] == 1)
        assert await complete_without_connect(backend, svc)
        assert backend.counters().connections_closed_by_cancel == 1


async def test_http2_required_against_an_http1_only_server_names_the_fix(
    svc: ReferenceService,
) -> None:
    options = EndpointOptions(endpoint=svc.url, keep_warm_seconds=0, http2=True)
    async with started_backend(options) as backend:
        with pytest.raises(ProtocolRejected) as failure:
            await complete(backend)
    message = str(failure.value)
    assert "127.0.0.1" in message and "HTTP/1.1 only" in message
    assert "set transport.http2 to auto" in message
    assert svc.stats()["h2PrefacesRejected"] >= 1


async def test_tls_with_auto_moves_to_the_http1_pool_when_the_server_picks_http1() -> None:
    args = ["--http1-only", "--close-after-stream", "--keep-alive-timeout", "5"]
    with ReferenceService(tls=True, extra_args=args) as service:
        options = EndpointOptions(
            endpoint=service.url, ca_file=str(service.ca_file), keep_warm_seconds=0
        )
        async with started_backend(options) as backend:
            assert isinstance(backend.transport, PinnedTransport)
            assert backend.transport.http1 is not None  # learned from the pre-connect
            assert await complete(backend)
            await eventually(lambda: service.stats()["connectionsClosedAfterStream"] == 1)
            assert await complete_without_connect(backend, service)
            counters = backend.counters()
            assert counters.protocol == "http/1.1" and counters.errors == 0
        assert service.stats()["httpVersions"] == {"1.1": 2}

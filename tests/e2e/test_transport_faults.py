"""Every upstream fault ends in an error of our tree, a bounded number of attempts, and recovery.

The reference service injects the faults (``set_fault``); a caller caches
only streams that finish, so raising before the end is what keeps a failed
or truncated answer out of the cache.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.backend import complete, started_backend
from tests.support.reference import ReferenceService
from transport import errors
from transport.http import HttpCompletionBackend
from transport.options import EndpointOptions

pytestmark = pytest.mark.e2e


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def options_for(svc: ReferenceService, **changes: Any) -> EndpointOptions:
    base = EndpointOptions(
        endpoint=svc.url,
        ca_file=str(svc.ca_file),
        keep_warm_seconds=0,
        read_timeout=1.0,
        max_response_chars=2048,
        breaker_threshold=100,
    )
    return base.replace(**changes)


@pytest.fixture
async def backend(
    shared_reference_service: ReferenceService,
) -> AsyncIterator[HttpCompletionBackend]:
    async with started_backend(options_for(shared_reference_service)) as backend:
        yield backend


@pytest.mark.parametrize(
    ("mode", "params", "error", "expected_attempts"),
    [
        ("status", {"status": 500}, errors.UpstreamStatusError, 1),
        ("malformed-json", {}, errors.UpstreamProtocolError, 1),
        ("malformed-sse", {}, errors.UpstreamProtocolError, 1),
        ("invalid-utf8", {}, errors.UpstreamProtocolError, 1),
        ("huge", {"size": 100_000}, errors.UpstreamProtocolError, 1),
        ("reset-mid-stream", {"chunks": 2}, errors.StreamResetError, 1),
        ("slow-headers", {"delay": 3}, errors.UpstreamTimeout, 1),
        ("never-ending", {"interval": 0.01}, errors.TransportError, 1),
        ("reset", {}, errors.ConnectError, 2),  # one retry on a fresh connection
    ],
)
async def test_fault_is_an_error_of_our_tree_then_service_recovers(
    shared_reference_service: ReferenceService,
    backend: HttpCompletionBackend,
    mode: str,
    params: dict[str, Any],
    error: type[errors.TransportError],
    expected_attempts: int,
) -> None:
    svc = shared_reference_service
    svc.set_fault(mode, -1, **params)
    with pytest.raises(error):
        await complete(backend)
    assert svc.completion_requests() == expected_attempts
    svc.clear_faults()
    assert await complete(backend)  # recovery as soon as the fault clears
    counters = backend.counters()
    assert counters.errors == 1 and sum(counters.errors_by_kind.values()) == 1


async def test_one_reset_before_headers_is_retried_transparently(
    shared_reference_service: ReferenceService, backend: HttpCompletionBackend
) -> None:
    svc = shared_reference_service
    svc.set_fault("reset", 1)
    assert await complete(backend)
    assert svc.completion_requests() == 2
    counters = backend.counters()
    assert counters.retries == 1 and counters.errors == 0
    assert counters.connections_opened == 2  # the retry went out on a fresh connection


async def test_short_retry_after_is_waited_out_once(
    shared_reference_service: ReferenceService, backend: HttpCompletionBackend
) -> None:
    svc = shared_reference_service
    svc.set_fault("status", 1, status=429, retryAfter=0)
    assert await complete(backend)
    assert svc.completion_requests() == 2 and backend.counters().retries == 1


async def test_long_retry_after_surfaces_and_later_requests_fail_fast(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    clock = FakeClock()
    async with started_backend(options_for(svc), clock=clock) as backend:
        svc.set_fault("status", 1, status=429, retryAfter=30)
        with pytest.raises(errors.RateLimited) as limited:
            await complete(backend)
        assert limited.value.retry_after == 30
        for _ in range(5):
            with pytest.raises(errors.CircuitOpenError):
                await complete(backend)
        assert svc.completion_requests() == 1  # the keystrokes after it never reached the service
        clock.now += 30
        assert await complete(backend)
        assert backend.counters().circuit == "closed"


async def test_dead_service_opens_the_breaker_and_a_probe_closes_it(
    shared_reference_service: ReferenceService,
) -> None:
    svc = shared_reference_service
    clock = FakeClock()
    options = options_for(svc, breaker_threshold=3, breaker_cooldown=5.0)
    async with started_backend(options, clock=clock) as backend:
        svc.set_fault("status", -1, status=503)
        for _ in range(10):
            with pytest.raises((errors.UpstreamStatusError, errors.CircuitOpenError)):
                await complete(backend)
        assert svc.completion_requests() == 3
        assert backend.counters().circuit == "open"
        svc.clear_faults()
        clock.now += 100
        assert await complete(backend)
        assert backend.counters().circuit == "closed"


async def test_connection_refused_is_a_connect_error_after_one_retry() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before the test connects
    options = EndpointOptions(endpoint=f"http://127.0.0.1:{port}/v1", keep_warm_seconds=0)
    async with started_backend(options) as backend:
        with pytest.raises(errors.ConnectError):
            await complete(backend)
        assert backend.counters().retries == 1
        assert backend.counters().connections_opened == 0

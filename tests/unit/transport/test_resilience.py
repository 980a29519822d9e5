from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from transport import errors
from transport.auth.provider import AuthProvider
from transport.backend import CompletionRequest
from transport.http import HttpCompletionBackend
from transport.options import EndpointOptions
from transport.resilience import (
    Backoff,
    CircuitBreaker,
    SecretRedactor,
    parse_retry_after,
    redact,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def breaker(clock: FakeClock, threshold: int = 3, cooldown: float = 5.0) -> CircuitBreaker:
    return CircuitBreaker(
        threshold=threshold,
        cooldown=cooldown,
        clock=clock,
        backoff=Backoff(cooldown, cooldown * 8, rng=lambda: 1.0),
    )


def fail(b: CircuitBreaker, exc: errors.TransportError | None = None) -> None:
    b.before_request()
    b.record_failure(exc or errors.ConnectError("refused"))


def test_breaker_opens_after_consecutive_failures_and_fails_fast() -> None:
    clock = FakeClock()
    b = breaker(clock)
    fail(b)
    fail(b)
    assert b.state == "closed"
    fail(b)
    assert b.state == "open"
    with pytest.raises(errors.CircuitOpenError):
        b.before_request()


def test_success_resets_the_failure_count() -> None:
    clock = FakeClock()
    b = breaker(clock)
    fail(b)
    fail(b)
    b.before_request()
    b.record_success()
    fail(b)
    fail(b)
    assert b.state == "closed"


def test_half_open_lets_exactly_one_probe_through_and_closes_on_success() -> None:
    clock = FakeClock()
    b = breaker(clock)
    for _ in range(3):
        fail(b)
    clock.now += 5.0
    assert b.state == "half-open"
    b.before_request()
    with pytest.raises(errors.CircuitOpenError):
        b.before_request()  # second caller while the probe runs
    b.record_success()
    assert b.state == "closed"
    b.before_request()


def test_failed_probe_reopens_with_a_longer_cooldown() -> None:
    clock = FakeClock()
    b = breaker(clock)
    for _ in range(3):
        fail(b)
    clock.now += 5.0
    fail(b, errors.UpstreamTimeout("read timed out"))  # the probe fails
    assert b.state == "open"
    clock.now += 5.0
    assert b.state == "open"  # cooldown doubled
    clock.now += 5.0
    assert b.state == "half-open"


def test_a_probe_refused_at_connect_keeps_the_base_cooldown() -> None:
    # nothing listens (a local server restarting): probing again costs it nothing
    clock = FakeClock()
    b = breaker(clock)
    for _ in range(3):
        fail(b)
    for _ in range(4):
        clock.now += 5.0
        assert b.state == "half-open"
        fail(b)  # the probe is refused
        assert b.state == "open"
    clock.now += 5.0
    assert b.state == "half-open"  # a restarted server is asked again after one cooldown


def test_rate_limit_holds_requests_until_retry_after_has_passed() -> None:
    clock = FakeClock()
    b = breaker(clock, threshold=10)
    b.before_request()
    b.record_failure(errors.RateLimited(429, retry_after=2.0))
    with pytest.raises(errors.CircuitOpenError):
        b.before_request()
    clock.now += 2.0
    b.before_request()


def test_client_errors_and_cancellations_do_not_open_the_breaker() -> None:
    clock = FakeClock()
    b = breaker(clock, threshold=1)
    b.before_request()
    b.record_failure(errors.UpstreamStatusError(400))
    b.before_request()
    b.record_failure(errors.UpstreamProtocolError("bad json"))
    b.before_request()
    b.record_abandoned()
    assert b.state == "closed"


def test_backoff_grows_exponentially_with_bounded_jitter() -> None:
    low = Backoff(0.1, 10.0, rng=lambda: 0.0)
    high = Backoff(0.1, 10.0, rng=lambda: 0.999999)
    assert [round(low.delay(n), 3) for n in range(4)] == [0.05, 0.1, 0.2, 0.4]
    assert all(high.delay(n) <= 0.1 * 2**n for n in range(4))
    assert high.delay(20) <= 10.0


def test_retry_after_in_seconds_or_as_a_date() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    date = "Wed, 21 Oct 2015 07:28:10 GMT"
    assert parse_retry_after(date, now=1445412480.0) == pytest.approx(10.0)


def test_secrets_are_masked_in_log_records(caplog: pytest.LogCaptureFixture) -> None:
    assert redact("key sk-abcdef here", ["sk-abcdef"]) == "key *** here"
    log = logging.getLogger("test.redaction")
    redactor = SecretRedactor(lambda: ["sk-secret-123"])
    caplog.handler.addFilter(redactor)
    try:
        with caplog.at_level(logging.INFO, logger="test.redaction"):
            log.info("sending with %s", "Bearer sk-secret-123")
    finally:
        caplog.handler.removeFilter(redactor)
    assert "sk-secret-123" not in caplog.text
    assert "Bearer ***" in caplog.text


@pytest.mark.parametrize(
    ("failure", "attempts"),
    [(errors.ConnectError("refused"), 2), (errors.TLSError("certificate verify failed"), 1)],
)
async def test_a_refused_connection_is_retried_once_a_tls_failure_is_not(
    failure: errors.TransportError, attempts: int
) -> None:
    calls: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise failure

    async def no_wait(seconds: float) -> None:
        return None

    backend = HttpCompletionBackend(
        EndpointOptions(endpoint="http://127.0.0.1:9/v1", provider="openai"),
        transport=httpx.MockTransport(refuse),
        sleep=no_wait,
    )
    try:
        with pytest.raises(type(failure)):
            async for _ in backend.stream(CompletionRequest(prefix="def f(", suffix="")):
                pass
    finally:
        await backend.aclose()
    assert len(calls) == attempts


class HeldAuth(AuthProvider):
    """Credentials that arrive only when the test releases them."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.release = asyncio.Event()

    async def header(self) -> dict[str, str]:
        self.asked.set()
        await self.release.wait()
        return {}


async def test_a_request_still_waiting_when_the_backend_closes_is_not_sent() -> None:
    # At shutdown, or when other endpoint settings replace the backend: what
    # was waiting must fail as a transport error, not as httpx's RuntimeError
    # from a closed client.
    calls: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(200, json={"choices": [{"text": "1"}]})

    auth = HeldAuth()
    backend = HttpCompletionBackend(
        EndpointOptions(endpoint="http://127.0.0.1:9/v1", provider="openai"),
        transport=httpx.MockTransport(answer),
        auth=auth,
    )

    async def ask() -> list[str]:
        return [c async for c in backend.stream(CompletionRequest(prefix="def f(", suffix=""))]

    request = asyncio.ensure_future(ask())
    await auth.asked.wait()
    await backend.aclose()
    auth.release.set()
    with pytest.raises(errors.BackendClosed, match="the backend is closed"):
        await request
    assert calls == []

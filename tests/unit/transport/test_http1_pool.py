"""The HTTP/1.1 pool: Keep-Alive honoured, one safe retry, against httpcore's mock network."""

from __future__ import annotations

import httpcore
import pytest

from transport.http1_pool import Http1Pool, KeepAlive, idle_lifetime, parse_keep_alive
from transport.network import PinnedResolverBackend

ORIGIN = httpcore.Origin(b"http", b"127.0.0.1", 8080)
OK = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n%s\r\nok"
KEPT_5S = OK % b"keep-alive: timeout=5, max=100\r\n"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pool_over(
    *replies: bytes, clock: Clock | None = None
) -> tuple[Http1Pool, PinnedResolverBackend]:
    """A pool (no spares) whose every connection answers with ``replies`` in turn, then EOF."""
    network = PinnedResolverBackend(backend=httpcore.AsyncMockBackend(list(replies)))
    pool = Http1Pool(
        ORIGIN, network_backend=network, spares=0, clock=clock or Clock(), keepalive_expiry=120
    )
    return pool, network


def request() -> httpcore.Request:
    return httpcore.Request(
        b"POST",
        b"http://127.0.0.1:8080/v1/completions",
        headers=[(b"host", b"127.0.0.1:8080"), (b"content-length", b"2")],
        content=b"{}",
    )


async def get(pool: Http1Pool) -> bytes:
    response = await pool.handle_async_request(request())
    try:
        return b"".join([part async for part in response.aiter_stream()])
    finally:
        await response.aclose()


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("timeout=5, max=100", KeepAlive(timeout=5.0, max=100)),
        (b"timeout=5", KeepAlive(timeout=5.0)),
        ("max=3", KeepAlive(max=3)),
        ('Timeout="2.5" , MAX=7', KeepAlive(timeout=2.5, max=7)),
        ("timeout=soon, max=", KeepAlive()),
        ("", KeepAlive()),
        (None, KeepAlive()),
    ],
)
def test_keep_alive_header_is_parsed_and_nonsense_ignored(
    header: str | bytes | None, expected: KeepAlive
) -> None:
    assert parse_keep_alive(header) == expected


def test_a_connection_is_retired_a_margin_before_the_servers_timeout() -> None:
    assert idle_lifetime(KeepAlive(timeout=5.0), 120.0) == 4.0
    assert idle_lifetime(KeepAlive(timeout=30.0), 120.0) == 24.0  # a fifth of it
    assert idle_lifetime(KeepAlive(timeout=600.0), 120.0) == 120.0  # ours is shorter
    assert idle_lifetime(KeepAlive(timeout=0.5), 120.0) == 0.0
    assert idle_lifetime(KeepAlive(), None) is None


async def test_a_kept_alive_connection_is_reused_within_the_servers_timeout() -> None:
    clock = Clock()
    pool, network = pool_over(KEPT_5S, KEPT_5S, clock=clock)
    assert await get(pool) == b"ok"
    clock.now += 3.9
    assert await get(pool) == b"ok"
    assert network.connections_opened == 1
    assert pool.counters.reused == 1 and pool.counters.retired == 0
    await pool.aclose()


async def test_a_connection_about_to_be_dropped_is_never_sent_on() -> None:
    clock = Clock()
    pool, network = pool_over(KEPT_5S, KEPT_5S, clock=clock)
    assert await get(pool) == b"ok"
    clock.now += 4.0  # the server would drop it at 5 s; we stop using it at 4 s
    assert await get(pool) == b"ok"
    assert network.connections_opened == 2
    assert pool.counters.retired == 1 and pool.counters.reused == 0
    await pool.aclose()


async def test_keep_alive_max_retires_the_connection_after_its_last_request() -> None:
    pool, network = pool_over(OK % b"keep-alive: timeout=5, max=1\r\n", KEPT_5S)
    await get(pool)
    await get(pool)
    assert network.connections_opened == 2
    await pool.aclose()


async def test_a_reused_connection_the_server_dropped_is_retried_once_elsewhere() -> None:
    # Each connection answers once, then the server has closed it (EOF).
    pool, network = pool_over(KEPT_5S)
    assert await get(pool) == b"ok"
    assert await get(pool) == b"ok"
    assert pool.counters.stale_retries == 1
    assert pool.counters.closed_by_server == 1
    assert network.connections_opened == 2
    await pool.aclose()


async def test_no_retry_once_a_byte_of_the_response_arrived() -> None:
    pool, network = pool_over(KEPT_5S, b"HTTP/1.1 200 OK\r\n")
    assert await get(pool) == b"ok"
    with pytest.raises(httpcore.RemoteProtocolError):
        await get(pool)
    assert pool.counters.stale_retries == 0
    assert network.connections_opened == 1
    await pool.aclose()


async def test_no_retry_when_a_fresh_connection_fails() -> None:
    pool, network = pool_over()
    with pytest.raises(httpcore.RemoteProtocolError):
        await get(pool)
    assert pool.counters.stale_retries == 0
    assert network.connections_opened == 1
    await pool.aclose()


async def test_an_abandoned_response_closes_its_connection_and_is_counted() -> None:
    pool, _ = pool_over(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nok\r\n")
    response = await pool.handle_async_request(request())
    async for _ in response.aiter_stream():
        break  # the caller stops reading: a cancelled stream
    await response.aclose()
    assert pool.counters.closed_by_cancel == 1
    assert pool.connections == []
    await pool.aclose()

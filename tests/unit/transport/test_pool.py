from __future__ import annotations

import httpx
import pytest

from transport.errors import UpstreamProtocolError
from transport.network import PinnedResolverBackend, is_ip_literal, tls_context
from transport.pool import ConnectionWarmer, PinnedTransport, map_errors


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def probe_client(seen: list[str]) -> httpx.AsyncClient:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.path)
        return httpx.Response(404)

    return httpx.AsyncClient(transport=httpx.MockTransport(answer), base_url="https://svc.test")


async def test_preconnect_tolerates_any_status() -> None:
    seen: list[str] = []
    async with probe_client(seen) as client:
        warmer = ConnectionWarmer(client, "https://svc.test/v1/models", keep_warm_seconds=45)
        assert await warmer.preconnect()
    assert seen == ["/v1/models"]


async def test_keep_warm_only_after_idleness_and_only_while_in_use() -> None:
    clock = FakeClock()
    async with probe_client([]) as client:
        warmer = ConnectionWarmer(
            client, "https://svc.test/health", keep_warm_seconds=45, active_window=600, clock=clock
        )
        clock.now = 100.0
        assert not warmer.due()  # never used: no pings
        warmer.touch()
        clock.now += 44
        assert not warmer.due()  # traffic recently: the connection is warm anyway
        clock.now += 2
        assert warmer.due()
        await warmer.preconnect()
        assert not warmer.due()  # one probe per idle period, not a stream of them
        clock.now += 46
        assert warmer.due()
        clock.now += 700
        assert not warmer.due()  # nobody has asked for a completion in 10 minutes


def test_pool_repr_tells_its_state() -> None:
    transport = PinnedTransport(
        backend=PinnedResolverBackend(),
        ssl_context=tls_context(ca_file=None, verify=True, http2=True),
    )
    assert repr(transport) == "<PinnedTransport opened=0 streams_reset=0 [no connections]>"


def test_ip_literals() -> None:
    assert is_ip_literal("127.0.0.1") and is_ip_literal("::1") and is_ip_literal("[::1]")
    assert not is_ip_literal("completions.test")


def test_an_http_client_bug_is_a_failed_request_not_a_crash() -> None:
    with pytest.raises(UpstreamProtocolError) as failure:
        with map_errors("svc.test", body=False):
            raise ValueError("semaphore released too many times")
    assert "svc.test" in str(failure.value) and "ValueError" in str(failure.value)

from __future__ import annotations

import asyncio

import dns.exception
import pytest

from transport.dns import DnsPrefetcher
from transport.errors import DNSError


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeServer:
    """A DNS server at the seam: answers from a table, counts queries."""

    def __init__(self, ttl: float = 60.0) -> None:
        self.ttl = ttl
        self.records = {"A": ["10.0.0.1"], "AAAA": ["fd00::1"]}
        self.queries: list[tuple[str, str]] = []
        self.down = False
        self.gate: asyncio.Event | None = None

    async def query(self, host: str, rdtype: str) -> tuple[list[str], float]:
        self.queries.append((host, rdtype))
        if self.gate is not None:
            await self.gate.wait()
        if self.down:
            raise dns.exception.Timeout()
        return list(self.records[rdtype]), self.ttl


class FakeSystem:
    def __init__(self) -> None:
        self.calls = 0
        self.fail = False

    async def resolve(self, host: str) -> list[str]:
        self.calls += 1
        if self.fail:
            raise OSError(-2, "Name or service not known")
        return ["192.0.2.7"]


def prefetcher(
    server: FakeServer, clock: FakeClock, system: FakeSystem | None = None
) -> DnsPrefetcher:
    return DnsPrefetcher(resolver=server, system=system or FakeSystem(), clock=clock)


async def test_cached_answer_is_served_without_queries_until_the_ttl_expires() -> None:
    server, clock = FakeServer(ttl=30), FakeClock()
    dns_cache = prefetcher(server, clock)
    assert await dns_cache.lookup("svc.test") == ["10.0.0.1", "fd00::1"]
    assert dns_cache.dns_lookups == 2  # one A and one AAAA query
    for _ in range(100):
        clock.now += 0.2
        assert await dns_cache.lookup("svc.test") == ["10.0.0.1", "fd00::1"]
    assert len(server.queries) == 2
    clock.now = 30.0
    assert dns_cache.addresses("svc.test") == []  # expired: nothing served from memory
    await dns_cache.lookup("svc.test")
    assert len(server.queries) == 4


async def test_refresh_is_due_at_three_quarters_of_the_ttl() -> None:
    server, clock = FakeServer(ttl=40), FakeClock()
    dns_cache = prefetcher(server, clock)
    await dns_cache.lookup("svc.test")
    assert dns_cache.refresh_due_at("svc.test") == pytest.approx(30.0)


async def test_ip_literals_and_localhost_need_no_lookup() -> None:
    server, clock = FakeServer(), FakeClock()
    dns_cache = prefetcher(server, clock)
    assert await dns_cache.lookup("127.0.0.1") == ["127.0.0.1"]
    assert await dns_cache.lookup("::1") == ["::1"]
    assert await dns_cache.lookup("localhost") == ["127.0.0.1", "::1"]
    assert server.queries == [] and dns_cache.dns_lookups == 0


async def test_failing_nameservers_fall_back_to_the_system_resolver() -> None:
    server, clock, system = FakeServer(), FakeClock(), FakeSystem()
    server.down = True
    dns_cache = prefetcher(server, clock, system)
    assert await dns_cache.lookup("svc.test") == ["192.0.2.7"]
    assert system.calls == 1 and dns_cache.fallbacks == 1


async def test_no_nameservers_means_the_system_resolver() -> None:
    system, clock = FakeSystem(), FakeClock()
    dns_cache = DnsPrefetcher((), system=system, clock=clock)
    assert await dns_cache.lookup("svc.test") == ["192.0.2.7"]
    assert await dns_cache.lookup("svc.test") == ["192.0.2.7"]
    assert system.calls == 1


async def test_expired_answer_is_kept_when_every_resolver_fails() -> None:
    server, clock, system = FakeServer(ttl=10), FakeClock(), FakeSystem()
    dns_cache = prefetcher(server, clock, system)
    await dns_cache.lookup("svc.test")
    server.down = system.fail = True
    clock.now = 100.0
    assert await dns_cache.lookup("svc.test") == ["10.0.0.1", "fd00::1"]


async def test_unresolvable_host_is_a_dns_error() -> None:
    server, clock, system = FakeServer(), FakeClock(), FakeSystem()
    server.down = system.fail = True
    with pytest.raises(DNSError, match="svc.test"):
        await prefetcher(server, clock, system).lookup("svc.test")


async def test_concurrent_lookups_share_one_query_round() -> None:
    server, clock = FakeServer(), FakeClock()
    server.gate = asyncio.Event()
    dns_cache = prefetcher(server, clock)
    waiters = [asyncio.create_task(dns_cache.lookup("svc.test")) for _ in range(20)]
    await asyncio.sleep(0)
    server.gate.set()
    results = await asyncio.gather(*waiters)
    assert all(r == ["10.0.0.1", "fd00::1"] for r in results)
    assert len(server.queries) == 2


async def test_prefetch_refreshes_in_the_background_before_expiry() -> None:
    server = FakeServer(ttl=0.2)
    dns_cache = DnsPrefetcher(resolver=server, system=FakeSystem(), min_ttl=0.2)
    try:
        await dns_cache.prefetch("svc.test")
        server.records["A"] = ["10.0.0.2"]
        for _ in range(200):
            if "10.0.0.2" in dns_cache.addresses("svc.test"):
                break
            await asyncio.sleep(0.01)
        assert "10.0.0.2" in dns_cache.addresses("svc.test")
    finally:
        await dns_cache.aclose()

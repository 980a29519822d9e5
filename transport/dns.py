"""DNS prefetch: resolve the endpoint's host before it is needed, keep it fresh.

``DnsPrefetcher`` resolves A and AAAA records with dnspython's async resolver
against ``transport.nameservers`` when those are configured, and with the
system resolver (``getaddrinfo`` in the default executor, so the event loop
never blocks) when they are not, or when they fail. Answers are cached for
their TTL; a background task re-resolves each prefetched host when
``refresh_fraction`` of the TTL has passed, so a completion never waits for
DNS while a valid answer is cached. When a refresh fails the old answer is
kept (serve-stale) until a later refresh succeeds.

``dns_lookups`` counts queries sent: one per record type to the configured
servers (that is what a DNS server logs), one per system-resolver call.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import dns.asyncresolver
import dns.exception
import dns.nameserver
import dns.resolver

from transport.errors import DNSError
from transport.network import is_ip_literal
from transport.tasks import stop_tasks

logger = logging.getLogger(__name__)

#: TTL assumed for system-resolver answers (getaddrinfo gives none)
DEFAULT_SYSTEM_TTL = 60.0
DEFAULT_REFRESH_FRACTION = 0.75
#: never refresh more often than this, whatever the TTL says
DEFAULT_MIN_TTL = 1.0
DEFAULT_QUERY_LIFETIME = 2.0

Records = tuple[list[str], float]


class QueryResolver(Protocol):
    """The seam to a DNS server: one record type, addresses and TTL."""

    async def query(self, host: str, rdtype: str) -> Records:
        """Addresses of type ``rdtype`` ("A" or "AAAA") and the answer's TTL."""
        ...


class SystemResolver(Protocol):
    """The seam to the operating system's resolver."""

    async def resolve(self, host: str) -> list[str]:
        """All addresses of ``host``."""
        ...


class DnspythonResolver:
    """Queries the configured ``"ip"``/``"ip:port"`` nameservers with dnspython."""

    def __init__(self, nameservers: Sequence[str], *, lifetime: float = DEFAULT_QUERY_LIFETIME):
        self._resolver = dns.asyncresolver.Resolver(configure=False)
        self._resolver.nameservers = [_nameserver(ns) for ns in nameservers]
        self._resolver.lifetime = lifetime

    async def query(self, host: str, rdtype: str) -> Records:
        """Resolve one record type; an empty answer (NODATA) is not an error."""
        try:
            answer = await self._resolver.resolve(host, rdtype, search=False)
        except dns.resolver.NoAnswer:
            return [], DEFAULT_SYSTEM_TTL
        rrset = answer.rrset
        assert rrset is not None
        return [r.to_text() for r in rrset], float(rrset.ttl)


def _nameserver(spec: str) -> dns.nameserver.Nameserver:
    spec = spec.strip()
    if spec.startswith("["):  # [v6]:port
        address, _, port = spec[1:].partition("]:")
        return dns.nameserver.Do53Nameserver(address.rstrip("]"), int(port or 53))
    if spec.count(":") == 1:  # v4:port
        address, port = spec.split(":")
        return dns.nameserver.Do53Nameserver(address, int(port))
    return dns.nameserver.Do53Nameserver(spec, 53)


class GetaddrinfoResolver:
    """The system resolver, run in the default executor."""

    async def resolve(self, host: str) -> list[str]:
        """Addresses from ``getaddrinfo``, IPv4 first, without duplicates."""
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        ordered = sorted(infos, key=lambda info: info[0] != socket.AF_INET)
        return list(dict.fromkeys(str(info[4][0]) for info in ordered))


@dataclass(frozen=True)
class _Entry:
    addresses: list[str]
    fetched_at: float
    ttl: float


class DnsPrefetcher:
    """A TTL-honouring address cache for the endpoint's host, refreshed ahead of expiry."""

    def __init__(
        self,
        nameservers: Sequence[str] = (),
        *,
        resolver: QueryResolver | None = None,
        system: SystemResolver | None = None,
        clock: Callable[[], float] = time.monotonic,
        refresh_fraction: float = DEFAULT_REFRESH_FRACTION,
        min_ttl: float = DEFAULT_MIN_TTL,
    ) -> None:
        if resolver is None and nameservers:
            resolver = DnspythonResolver(nameservers)
        self._resolver = resolver
        self._system = system if system is not None else GetaddrinfoResolver()
        self._clock = clock
        self._refresh_fraction = refresh_fraction
        self._min_ttl = min_ttl
        self._cache: dict[str, _Entry] = {}
        self._inflight: dict[str, asyncio.Task[_Entry]] = {}
        self._refreshers: dict[str, asyncio.Task[None]] = {}
        self.dns_lookups = 0
        self.fallbacks = 0

    def addresses(self, host: str) -> list[str]:
        """Cached addresses of ``host`` while valid, else ``[]``; never queries."""
        if is_ip_literal(host):
            return [host.strip("[]")]
        if host == "localhost":
            return ["127.0.0.1", "::1"]
        entry = self._cache.get(host)
        if entry is None or self._clock() >= entry.fetched_at + entry.ttl:
            return []
        return list(entry.addresses)

    def refresh_due_at(self, host: str) -> float | None:
        """When the cached answer for ``host`` will be refreshed (clock time)."""
        entry = self._cache.get(host)
        if entry is None:
            return None
        return entry.fetched_at + entry.ttl * self._refresh_fraction

    async def lookup(self, host: str) -> list[str]:
        """Cached addresses while valid; otherwise resolve now (one query round at a time)."""
        cached = self.addresses(host)
        if cached:
            return cached
        try:
            return list((await self._resolve_once(host)).addresses)
        except DNSError:
            stale = self._cache.get(host)
            if stale is not None:
                logger.warning("DNS for %s failed; using the expired answer", host)
                return list(stale.addresses)
            raise

    async def prefetch(self, host: str) -> list[str]:
        """Resolve ``host`` now and keep it refreshed in the background."""
        addresses = await self.lookup(host)
        if self.addresses(host) and host not in self._refreshers and not is_ip_literal(host):
            self._refreshers[host] = asyncio.create_task(
                self._refresh_loop(host), name=f"scopecache-dns-{host}"
            )
        return addresses

    async def _refresh_loop(self, host: str) -> None:
        while True:
            due = self.refresh_due_at(host)
            delay = self._min_ttl if due is None else max(0.0, due - self._clock())
            await asyncio.sleep(max(delay, 0.01))
            try:
                await self._resolve_once(host)
            except DNSError as exc:
                logger.warning("DNS refresh for %s failed: %s", host, exc)
                await asyncio.sleep(self._min_ttl)

    async def _resolve_once(self, host: str) -> _Entry:
        task = self._inflight.get(host)
        if task is None:
            task = asyncio.create_task(self._resolve(host))
            self._inflight[host] = task
            task.add_done_callback(lambda _t: self._inflight.pop(host, None))
        return await asyncio.shield(task)

    async def _resolve(self, host: str) -> _Entry:
        addresses: list[str] = []
        ttl = DEFAULT_SYSTEM_TTL
        if self._resolver is not None:
            try:
                addresses, ttl = await self._query_both(self._resolver, host)
            except (dns.exception.DNSException, OSError) as exc:
                logger.info("nameservers failed for %s (%s); using the system resolver", host, exc)
        if not addresses:
            if self._resolver is not None:
                self.fallbacks += 1
            self.dns_lookups += 1
            try:
                addresses = await self._system.resolve(host)
            except OSError as exc:
                raise DNSError(f"cannot resolve {host}: {exc.strerror or exc}") from exc
            ttl = DEFAULT_SYSTEM_TTL
        if not addresses:
            raise DNSError(f"{host} has no addresses")
        entry = _Entry(addresses, self._clock(), max(ttl, self._min_ttl))
        self._cache[host] = entry
        logger.debug("resolved %s -> %s (ttl %.0fs)", host, addresses, entry.ttl)
        return entry

    async def _query_both(self, resolver: QueryResolver, host: str) -> Records:
        self.dns_lookups += 2
        results = await asyncio.gather(
            resolver.query(host, "A"), resolver.query(host, "AAAA"), return_exceptions=True
        )
        addresses: list[str] = []
        ttls: list[float] = []
        failure: BaseException | None = None
        for result in results:
            if isinstance(result, BaseException):
                failure = result
                continue
            found, ttl = result
            addresses += found
            if found:
                ttls.append(ttl)
        if not addresses and failure is not None:
            raise failure
        return addresses, min(ttls) if ttls else DEFAULT_SYSTEM_TTL

    async def aclose(self) -> None:
        """Stop background refreshes."""
        await stop_tasks(*self._refreshers.values(), *self._inflight.values())
        self._refreshers.clear()

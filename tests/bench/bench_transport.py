"""Transport benchmark: what prefetch, pre-connect and pooling save on a miss.

``run(quick)`` returns rows ``{"name", "value", "baseline", "ratio", "unit"}``
measured in one run against the real reference service (TLS, HTTP/2, no
emulated model latency, so the transport's own costs are what is measured):

* ``first completion, prefetched+pre-connected`` vs a cold first completion
  (fresh backend: DNS + connect + TLS + request), and a warm request vs cold;
* the backend's miss path vs a bare ``httpx.AsyncClient(http2=True)`` request
  on a warm connection to the same service (the overhead of our layers);
* 200 concurrent completions: connections opened and wall time vs an
  HTTP/1.1 client that opens a connection per request.

DNS is included when dnsmasq is installed (the endpoint is then
``completions.test``, resolved through it); otherwise the endpoint is an IP.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from tests.bench.rows import row
from tests.support import dnsmasq
from tests.support.backend import REQUEST, complete, started_backend
from tests.support.reference import ReferenceService
from transport.http import HttpCompletionBackend
from transport.options import EndpointOptions


async def _timed(action: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await action()
    return (time.perf_counter() - started) * 1000


async def _first_completion(options: EndpointOptions, *, prepared: bool) -> float:
    backend = HttpCompletionBackend(options)
    try:
        if prepared:
            await backend.start()
        return await _timed(lambda: complete(backend))
    finally:
        await backend.aclose()


async def _measure(
    svc: ReferenceService, options: EndpointOptions, quick: bool
) -> list[dict[str, Any]]:
    rounds = 5 if quick else 25
    rows: list[dict[str, Any]] = []
    cold = statistics.median(
        [await _first_completion(options, prepared=False) for _ in range(rounds)]
    )
    prefetched = statistics.median(
        [await _first_completion(options, prepared=True) for _ in range(rounds)]
    )
    async with started_backend(options) as backend:
        await complete(backend)
        warm = statistics.median(
            [await _timed(lambda: complete(backend)) for _ in range(rounds * 4)]
        )
        rows.append(
            row("first completion, prefetched+pre-connected vs cold", prefetched, cold, "ms")
        )
        rows.append(row("warm completion vs cold first completion", warm, cold, "ms"))

        context = ssl.create_default_context(cafile=str(svc.ca_file))
        _, body = backend._provider.build_request(REQUEST)
        async with httpx.AsyncClient(http2=True, verify=context) as bare:

            async def bare_request() -> None:
                async with bare.stream("POST", svc.url + "/completions", json=body) as response:
                    async for _ in response.aiter_raw():
                        pass

            await bare_request()
            bare_ms = statistics.median([await _timed(bare_request) for _ in range(rounds * 4)])
        rows.append(row("miss path vs bare httpx request (warm)", warm, bare_ms, "ms"))

        n = 50 if quick else 200
        before = svc.stats()["connections"]
        ours = await _timed(lambda: asyncio.gather(*(complete(backend) for _ in range(n))))
        ours_conns = svc.stats()["connections"] - before
        limits = httpx.Limits(max_connections=n, max_keepalive_connections=0)
        async with httpx.AsyncClient(http2=False, verify=context, limits=limits, timeout=30) as h1:

            async def one() -> None:
                response = await h1.post(svc.url + "/completions", json=body)
                response.raise_for_status()

            before = svc.stats()["connections"]
            theirs = await _timed(lambda: asyncio.gather(*(one() for _ in range(n))))
            theirs_conns = svc.stats()["connections"] - before
        rows.append(
            row(
                f"{n} concurrent: connections opened vs HTTP/1.1 per-request",
                ours_conns,
                theirs_conns,
                "connections",
            )
        )
        rows.append(row(f"{n} concurrent: wall time vs HTTP/1.1 per-request", ours, theirs, "ms"))
    return rows


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Measure and return the rows (see the module docstring)."""
    with ReferenceService(tls=True) as svc, contextlib.ExitStack() as stack:
        endpoint, nameservers = svc.url, ()
        if dnsmasq.available():
            server = stack.enter_context(dnsmasq.Dnsmasq({"completions.test": "127.0.0.1"}, ttl=60))
            endpoint = f"https://completions.test:{svc.port}/v1"
            nameservers = (server.nameserver,)
        options = EndpointOptions(
            endpoint=endpoint,
            ca_file=str(svc.ca_file),
            nameservers=nameservers,
            keep_warm_seconds=0,
        )
        return asyncio.run(_measure(svc, options, quick))


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(
            f"{row['name']:<62} {row['value']:>10} {row['unit']:<12}"
            f" baseline {row['baseline']:>10}  x{row['ratio']}"
        )

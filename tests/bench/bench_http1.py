"""HTTP/1.1 benchmark: misses against a server that closes after every stream, and vs HTTP/2.

``run(quick)`` returns rows ``{"name", "value", "baseline", "ratio", "unit"}``,
all measured in one run against reference services on cleartext 127.0.0.1
with no emulated model latency (so the transport's own costs are measured):

* a miss right after a closed-after-stream response (``--http1-only
  --close-after-stream``, as llama-server behaves) vs a miss on a warm
  keep-alive connection (``--http1-only``): the spare connection the pool keeps
  ready should make these equal;
* what a pool without a spare pays there: the same backend over an HTTP/1.1
  pool that keeps no spare, so each miss connects, vs the same warm baseline;
* the HTTP/1.1 miss (keep-alive) vs the HTTP/2 miss (h2c) of the same backend.

Between misses the benchmark waits until the pool reports a ready
connection, as the gaps between keystrokes would allow; that wait is not
timed.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from typing import Any

import httpcore

from tests.bench.rows import row
from tests.support.backend import complete, started_backend
from tests.support.reference import ReferenceService
from transport.http import HttpCompletionBackend
from transport.network import PinnedResolverBackend
from transport.options import EndpointOptions
from transport.pool import PinnedTransport

LLAMA_LIKE = ["--http1-only", "--close-after-stream", "--keep-alive-timeout", "5"]


async def _ready(backend: HttpCompletionBackend) -> None:
    """Wait (untimed) until the HTTP/1.1 pool holds a ready connection."""
    deadline = time.monotonic() + 5
    while backend.counters().connections_ready < 1 and time.monotonic() < deadline:
        await asyncio.sleep(0.005)


async def _misses(options: EndpointOptions, rounds: int, *, http1: bool) -> list[float]:
    """Milliseconds per miss through the backend, after a warm-up."""
    times: list[float] = []
    async with started_backend(options) as backend:
        for _ in range(3):
            await complete(backend)
        for _ in range(rounds):
            if http1:
                await _ready(backend)
            started = time.perf_counter()
            assert await complete(backend)
            times.append((time.perf_counter() - started) * 1000)
        if http1:
            assert backend.counters().errors == 0
    return times


async def _no_spare_misses(options: EndpointOptions, rounds: int) -> list[float]:
    """The same backend over an HTTP/1.1 pool that keeps no spare: it connects per miss."""
    network = PinnedResolverBackend()
    pool = PinnedTransport(
        backend=network,
        ssl_context=None,
        http1=True,
        http2=False,
        origin=httpcore.Origin(b"http", options.host.encode(), options.port),
        spares=0,
    )
    times: list[float] = []
    async with started_backend(options, transport=pool) as backend:
        for _ in range(rounds + 3):
            started = time.perf_counter()
            assert await complete(backend)
            times.append((time.perf_counter() - started) * 1000)
    assert network.connections_opened >= rounds  # one connect per miss: what is measured
    return times[3:]


async def _measure(
    llama: ReferenceService, keep: ReferenceService, h2c: ReferenceService, quick: bool
) -> list[dict[str, Any]]:
    rounds = 15 if quick else 80
    plain = EndpointOptions(endpoint=llama.url, keep_warm_seconds=0)
    after_close = statistics.median(await _misses(plain, rounds, http1=True))
    kept = EndpointOptions(endpoint=keep.url, keep_warm_seconds=0)
    warm = statistics.median(await _misses(kept, rounds, http1=True))
    fresh = statistics.median(await _no_spare_misses(plain, rounds))
    h2 = EndpointOptions(endpoint=h2c.url, keep_warm_seconds=0, http2=True)
    http2 = statistics.median(await _misses(h2, rounds, http1=False))
    return [
        row("HTTP/1.1 miss after a closed-after-stream response vs warm keep-alive miss",
             after_close, warm, "ms"),
        row("HTTP/1.1 miss after a closed stream without a spare (connects) vs warm miss",
             fresh, warm, "ms"),
        row("HTTP/1.1 keep-alive miss vs HTTP/2 (h2c) miss", warm, http2, "ms"),
    ]  # fmt: skip


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Measure and return the rows (see the module docstring)."""
    with (
        ReferenceService(tls=False, extra_args=LLAMA_LIKE) as llama,
        ReferenceService(tls=False, extra_args=["--http1-only"]) as keep,
        ReferenceService(tls=False) as h2c,
    ):
        return asyncio.run(_measure(llama, keep, h2c, quick))


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(
            f"{row['name']:<75} {row['value']:>8} {row['unit']:<4}"
            f" baseline {row['baseline']:>8}  x{row['ratio']}"
        )

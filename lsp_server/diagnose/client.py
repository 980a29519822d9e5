"""``scopecache diagnose``, client layer: scopecache's transport, a cold client, the cache.

The same completion goes ``--samples`` times through scopecache's own
backend (``transport.factory.build_backend`` after ``start()``: DNS
prefetched, connection pre-opened and kept) and through a cold client (a
new httpx client per request that resolves, connects and handshakes
first, as clients without a pool do). The difference is what the pool
saves per request. What scopecache's transport itself adds is measured
against a bare warm connection in the same run, interleaved pair by pair
(alternating which goes first, so drift and a noisy neighbour hit both
alike): the median of the pairs' differences, with a distribution-free 90%
bound on it, never below zero. Only an overhead whose lower bound is over
the limit is called slow.

With ``--metrics-url`` the cache hit ratio of a running server is read from
its stats JSON: an ``http(s)://`` URL (``/stats.json`` of a server started
with ``--metrics-port``), or a file holding the ``scopecache/stats`` answer.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from lsp_server.diagnose.errors import explain
from lsp_server.diagnose.report import Limit, Measurement, failing, info, judged, skipped
from lsp_server.diagnose.sample import PromptSample
from lsp_server.diagnose.service import (
    PinnedAddresses,
    ServiceProbe,
    StreamTiming,
    probe_client,
)
from lsp_server.observe.stats import percentile
from transport import errors
from transport.backend import CompletionBackend, TransportCounters
from transport.dns import DnsPrefetcher
from transport.network import PinnedResolverBackend, is_ip_literal
from transport.options import EndpointOptions

Clock = Callable[[], float]

OVERHEAD_LIMIT = Limit(10.0)
#: pairs measured for the transport overhead, at least
MIN_PAIRS = 7
HIT_RATIO_LIMIT = Limit(20.0, unit="%", higher_is_better=True)
METRICS_TIMEOUT = 3.0


async def timed_backend(
    backend: CompletionBackend, sample: PromptSample, max_tokens: int, clock: Clock
) -> StreamTiming:
    """One completion through a ``CompletionBackend``."""
    started = clock()
    first: float | None = None
    chunks = 0
    async for text in backend.stream(sample.request(max_tokens)):
        if text:
            chunks += 1
            if first is None:
                first = clock()
    ended = clock()
    return StreamTiming((first or ended) - started, ended - started, chunks)


async def fresh_probe_client(options: EndpointOptions) -> httpx.AsyncClient:
    """A new client of its own (no pool, no prefetch), on addresses looked up just now."""
    dns = DnsPrefetcher(options.nameservers)
    try:
        addresses = [options.host] if is_ip_literal(options.host) else await dns.lookup(
            options.host
        )
    finally:
        await dns.aclose()
    return probe_client(options, PinnedResolverBackend(PinnedAddresses(addresses)))


async def timed_cold(
    options: EndpointOptions,
    sample: PromptSample,
    headers: dict[str, str],
    clock: Clock,
) -> StreamTiming:
    """One completion through a brand-new client: DNS, TCP, TLS, then the request."""
    started = clock()
    client = await fresh_probe_client(options)
    try:
        setup = clock() - started
        timing = await ServiceProbe(options, client, headers, clock=clock).stream_completion(
            sample
        )
    finally:
        await client.aclose()
    return StreamTiming(setup + timing.ttft, setup + timing.total, timing.chunks)


async def diagnose_client(
    options: EndpointOptions,
    backend: CompletionBackend,
    sample: PromptSample,
    headers: dict[str, str],
    *,
    samples: int,
    clock: Clock = time.perf_counter,
) -> list[Measurement]:
    """Pooled vs cold time to first token, the transport's own cost, connections opened."""
    try:
        await backend.start()
        pooled = [await timed_backend(backend, sample, options.max_tokens, clock)
                  for _ in range(samples)]
    except errors.TransportError as exc:
        return [failing("scopecache ttft (p50)", explain(exc, options))]
    pooled50 = percentile([t.ttft * 1000 for t in pooled], 50)
    out = [info("scopecache ttft (p50)", pooled50, "ms",
                hint="scopecache's transport: DNS prefetched, connection pre-opened and kept")]
    try:
        cold = [await timed_cold(options, sample, headers, clock) for _ in range(samples)]
    except errors.TransportError as exc:
        out.append(failing("cold client ttft (p50)", explain(exc, options)))
        return out
    cold50 = percentile([t.ttft * 1000 for t in cold], 50)
    saved = cold50 - pooled50
    out.append(info("cold client ttft (p50)", cold50, "ms",
                    hint="a new client per request: CA bundle load, DNS, TCP and TLS every time"))
    if saved >= 0:
        out.append(info("pool saves", saved, "ms",
                        hint=f"per request ({100 * saved / cold50:.0f}% of the cold time)"
                        if cold50 > 0 else None))
    else:
        out.append(Measurement("pool saves", saved, "ms", ">= 0 ms", "slow",
                               "the pooled transport was slower than a cold client: run again; "
                               "if it persists, report it with this output"))
    try:
        diffs = await interleaved_overhead(
            options, backend, sample, headers, pairs=max(samples, MIN_PAIRS), clock=clock
        )
    except errors.TransportError as exc:
        out.append(failing("transport overhead", explain(exc, options)))
    else:
        out.append(overhead_measurement(diffs))
    out += _connections(backend, samples)
    return out


async def interleaved_overhead(
    options: EndpointOptions,
    backend: CompletionBackend,
    sample: PromptSample,
    headers: dict[str, str],
    *,
    pairs: int,
    clock: Clock,
) -> list[float]:
    """Per pair, scopecache's time to first token minus a bare warm connection's, in ms.

    Both paths are warmed first; then each pair runs both back to back,
    alternating which goes first.
    """
    client = await fresh_probe_client(options)
    try:
        bare = ServiceProbe(options, client, headers, clock=clock)
        await bare.stream_completion(sample)  # open and warm the bare connection
        await timed_backend(backend, sample, options.max_tokens, clock)
        diffs: list[float] = []
        for index in range(pairs):
            if index % 2:
                ours = await timed_backend(backend, sample, options.max_tokens, clock)
                theirs = await bare.stream_completion(sample)
            else:
                theirs = await bare.stream_completion(sample)
                ours = await timed_backend(backend, sample, options.max_tokens, clock)
            diffs.append((ours.ttft - theirs.ttft) * 1000.0)
        return diffs
    finally:
        await client.aclose()


def median_bounds(values: list[float], confidence: float = 0.9) -> tuple[float, float, float]:
    """The median of ``values`` and a distribution-free ``confidence`` interval for it.

    The interval is the sign test's: the k-th smallest and k-th largest value,
    with k the largest rank whose coverage is still at least ``confidence``
    (with 5 values that is the minimum and maximum, 94% coverage).
    """
    ordered = sorted(values)
    n = len(ordered)
    median = percentile(ordered, 50)
    k = 1
    while k < n // 2 + 1:
        tails = 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n
        if 1 - tails < confidence:
            break
        k += 1
    return median, ordered[k - 1], ordered[n - k]


def overhead_measurement(diffs: list[float]) -> Measurement:
    """The transport overhead: median over pairs, a 90% bound, clipped at zero, judged."""
    median, low, high = (max(0.0, v) for v in median_bounds(diffs))
    bound = f"median of {len(diffs)} interleaved pairs, 90% bound {low:.1f}-{high:.1f} ms"
    verdict = OVERHEAD_LIMIT.judge(low)  # slow only when even the lower bound is over
    hint = bound if verdict == "ok" else (
        f"scopecache's transport adds {median:.0f} ms over a bare warm connection "
        f"({bound}): check the resilience settings, or report it"
    )
    return Measurement(
        "transport overhead", median, "ms", OVERHEAD_LIMIT.describe(), verdict, hint
    )


def _connections(backend: CompletionBackend, samples: int) -> list[Measurement]:
    counters = backend.counters()
    if counters.protocol == "http/1.1":
        return _http1_connections(counters, samples)
    return [_shared_connection(counters.connections_opened, samples)]


def _http1_connections(counters: TransportCounters, samples: int) -> list[Measurement]:
    """HTTP/1.1: many connections are normal; a request waiting for a connect is not."""
    closed = counters.connections_closed_by_server
    opened_hint = (f"the server closed {closed}: it closes after each streamed response "
                   "(llama.cpp does); a spare is kept connected ahead" if closed else None)
    rows = [
        info("protocol spoken", "http/1.1"),
        info("connections opened", counters.connections_opened, hint=opened_hint),
        info("connections reused", counters.connections_reused),
    ]
    waits = counters.connect_waits
    if waits <= 1:  # the pre-connect itself
        rows.append(Measurement("requests waiting for a connect", waits, "", "<= 1", "ok", None))
    else:
        rows.append(Measurement(
            "requests waiting for a connect", waits, "", "<= 1", "slow",
            f"{waits} of {samples} requests waited for a new connection: the server drops "
            "connections faster than the pool replaces them; raise transport.maxConnections"))
    return rows


def _shared_connection(opened: int, samples: int) -> Measurement:
    if opened <= 1:
        return Measurement("connections opened", opened, "", "1", "ok", None)
    return Measurement("connections opened", opened, "", "1", "slow",
                       f"{opened} connections for {samples} sequential requests: the service "
                       "closes idle connections")


def read_server_stats(source: str) -> dict[str, Any]:
    """The stats JSON of a running server, from a URL or a file; raises ``ValueError``."""
    try:
        if source.startswith(("http://", "https://")):
            url = source.rstrip("/")
            if httpx.URL(url).path in ("", "/"):
                url += "/stats.json"
            response = httpx.get(url, timeout=METRICS_TIMEOUT, trust_env=False)
            response.raise_for_status()
            data = response.json()
        else:
            data = json.loads(Path(source).read_text(encoding="utf-8"))
    except (httpx.HTTPError, OSError, ValueError) as exc:
        raise ValueError(f"cannot read server stats from {source}: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{source} does not hold a stats JSON object")
    return data


def hit_ratio(stats: dict[str, Any]) -> float | None:
    """Share of requests answered without an upstream request (None: no requests yet)."""
    requests = stats.get("requests")
    if not isinstance(requests, int) or requests <= 0:
        return None
    ratio = stats.get("hitRatio")
    if isinstance(ratio, int | float):
        return float(ratio)
    served = stats.get("served") if isinstance(stats.get("served"), dict) else {}
    assert isinstance(served, dict)
    hits = sum(v for k, v in served.items() if k != "upstream" and isinstance(v, int))
    return hits / requests


def cache_measurement(source: str | None) -> Measurement:
    """The running server's cache hit ratio, from ``--metrics-url``."""
    name = "cache hit ratio"
    if source is None:
        return skipped(name, "pass --metrics-url (a server's /stats.json, or a file holding "
                       "its scopecache/stats answer) to see its hit ratio")
    try:
        stats = read_server_stats(source)
    except ValueError as exc:
        return failing(name, str(exc))
    ratio = hit_ratio(stats)
    if ratio is None:
        return skipped(name, "the server has not answered any completion request yet")
    return judged(name, 100.0 * ratio, HIT_RATIO_LIMIT,
                  f"only {100 * ratio:.0f}% of suggestions come from the cache: check "
                  "cache.policy and cache.capacity, or whether edits keep changing the keys")

"""``scopecache diagnose``, client layer: scopecache's transport, a cold client, the cache.

The same completion goes ``--samples`` times through scopecache's own
backend (``transport.factory.build_backend`` after ``start()``: DNS
prefetched, connection pre-opened and kept) and through a cold client (a
new httpx client per request that resolves, connects and handshakes
first, as clients without a pool do). The difference is what the pool
saves per request. The pooled time is also compared with the service
layer's warm time: what scopecache's transport itself adds.

With ``--metrics-url`` the cache hit ratio of a running server is read from
its stats JSON: an ``http(s)://`` URL (``/stats.json`` of a server started
with ``--metrics-port``), or a file holding the ``scopecache/stats`` answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from lsp_server.diagnose_errors import explain
from lsp_server.diagnose_report import Limit, Measurement, failing, info, judged, skipped
from lsp_server.diagnose_sample import PromptSample
from lsp_server.diagnose_service import (
    PinnedAddresses,
    ServiceProbe,
    StreamTiming,
    probe_client,
)
from lsp_server.stats import percentile
from transport import errors
from transport.backend import CompletionBackend, TransportCounters
from transport.dns import DnsPrefetcher
from transport.network import PinnedResolverBackend, is_ip_literal
from transport.options import EndpointOptions

Clock = Callable[[], float]

OVERHEAD_LIMIT = Limit(10.0)
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


async def timed_cold(
    options: EndpointOptions,
    sample: PromptSample,
    headers: dict[str, str],
    clock: Clock,
) -> StreamTiming:
    """One completion through a brand-new client: DNS, TCP, TLS, then the request."""
    started = clock()
    dns = DnsPrefetcher(options.nameservers)
    try:
        addresses = [options.host] if is_ip_literal(options.host) else await dns.lookup(
            options.host
        )
    finally:
        await dns.aclose()
    client = probe_client(options, PinnedResolverBackend(PinnedAddresses(addresses)))
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
    service_ttft_ms: float | None,
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
    if service_ttft_ms is not None:
        overhead = pooled50 - service_ttft_ms
        out.append(judged("transport overhead", overhead, OVERHEAD_LIMIT,
                          f"scopecache's transport adds {overhead:.0f} ms over a bare warm "
                          "connection (service layer): check the resilience settings, or "
                          "report it"))
    out += _connections(backend, samples)
    return out


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

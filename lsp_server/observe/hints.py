"""Root-cause hints: when upstream latency or errors breach, say which signal moved.

The server samples a few numbers once a second (``signal_values`` of its
``scopecache/stats`` answer) into ``MetricsRegistry.history``. ``diagnose``
looks at the samples of the last ``window`` seconds: if the upstream error
ratio or the time to first token is over its threshold (or the circuit is
open), it names the transport signals that moved in the same window —
connections reopened, pool saturated, DNS answers re-resolved, rate limiting,
timeouts, TLS or connect failures. The kinds of failure behind the errors
(TLS, connect, timeout, ...) come first, the most frequent first; the signals
that merely moved with them follow. No breach, no hints: a quiet dashboard
means a healthy service.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lsp_server.observe.metrics import Sample

#: the window hints look at, seconds
DEFAULT_WINDOW = 300.0


@dataclass(frozen=True, kw_only=True)
class HintThresholds:
    """When upstream counts as breaching, and how much movement is worth a hint."""

    #: upstream errors / upstream requests in the window
    error_ratio: float = 0.05
    #: p95 time to first token, milliseconds
    ttft_p95_ms: float = 1500.0
    #: connections opened in the window beyond the first one
    reopened: int = 3
    #: DNS queries in the window (a refreshed answer costs one or two per TTL)
    dns_lookups: int = 8


def signal_values(stats: Mapping[str, Any]) -> dict[str, float]:
    """The numbers sampled into the history, from a ``scopecache/stats`` answer."""
    served = stats.get("served", {})
    transport = stats.get("transport", {})
    pool = stats.get("pool", {})
    metrics = stats.get("metrics", {})
    by_kind = transport.get("errorsByKind", {})
    total_served = sum(int(v) for v in served.values())
    ttft = metrics.get("upstreamTtftMs", {})
    latency = stats.get("latencyMs", {})
    return {
        "requests": float(stats.get("requests", 0)),
        "served": float(total_served),
        "hits": float(total_served - int(served.get("upstream", 0))),
        "upstreamRequests": float(stats.get("upstreamRequests", 0)),
        "upstreamErrors": float(stats.get("upstreamErrors", 0)),
        "transportErrors": float(sum(int(v) for v in by_kind.values())),
        "rateLimited": float(by_kind.get("rate_limited", 0)),
        "timeouts": float(by_kind.get("timeout", 0)),
        "connectErrors": float(by_kind.get("connect", 0) + by_kind.get("reset", 0)),
        "tlsErrors": float(by_kind.get("tls", 0)),
        "dnsErrors": float(by_kind.get("dns", 0)),
        # On HTTP/1.1 servers may close after every stream (llama.cpp does) and
        # the pool replaces them ahead of need: only a request that had to wait
        # for a connect is a reopened connection that cost something.
        "connectionsOpened": float(
            transport.get("connectWaits", 0)
            if transport.get("protocol") == "http/1.1"
            else transport.get("connectionsOpened", 0)
        ),
        "dnsLookups": float(transport.get("dnsLookups", 0)),
        "dnsFallbacks": float(transport.get("dnsFallbacks", 0)),
        "circuitOpen": 1.0 if transport.get("circuit") == "open" else 0.0,
        "inflight": float(stats.get("inflight", 0)),
        "poolInUse": float(pool.get("inUse", 0)),
        "poolIdle": float(pool.get("idle", 0)),
        "poolMax": float(pool.get("max", 0)),
        "ttftP50Ms": float(ttft.get("p50", 0.0)),
        "ttftP95Ms": float(ttft.get("p95", 0.0)),
        "hitP95Ms": float(latency.get("hit", {}).get("p95", 0.0)),
        "missP95Ms": float(latency.get("miss", {}).get("p95", 0.0)),
    }


def _moved(samples: Sequence[Sample], name: str) -> float:
    """How much a counter grew over the samples (0 for fewer than two)."""
    if len(samples) < 2:
        return 0.0
    return samples[-1].values.get(name, 0.0) - samples[0].values.get(name, 0.0)


def _minutes(window: float) -> str:
    return f"{window / 60:.0f} min" if window >= 60 else f"{window:.0f} s"


def symptoms(samples: Sequence[Sample], thresholds: HintThresholds) -> list[str]:
    """What breaches in the window: upstream errors, slow first tokens, an open circuit."""
    if not samples:
        return []
    found: list[str] = []
    requests = _moved(samples, "upstreamRequests")
    errors = _moved(samples, "upstreamErrors")
    if requests > 0 and errors / requests > thresholds.error_ratio:
        found.append(f"upstream errors {errors:.0f} of {requests:.0f} ({errors / requests:.0%})")
    ttft = samples[-1].values.get("ttftP95Ms", 0.0)
    if ttft > thresholds.ttft_p95_ms:
        found.append(f"time to first token p95 {ttft:.0f} ms")
    if samples[-1].values.get("circuitOpen", 0.0):
        found.append("circuit breaker open")
    return found


def diagnose(
    samples: Sequence[Sample],
    *,
    window: float = DEFAULT_WINDOW,
    thresholds: HintThresholds | None = None,
) -> list[dict[str, str]]:
    """Hints (``signal``, ``message``, ``symptom``) for the samples of one window."""
    limits = thresholds or HintThresholds()
    found = symptoms(samples, limits)
    if not found:
        return []
    symptom = "; ".join(found)
    span = _minutes(min(window, samples[-1].t - samples[0].t) if len(samples) > 1 else window)
    hints: list[dict[str, str]] = []

    def hint(signal: str, message: str) -> None:
        hints.append({"signal": signal, "message": message, "symptom": symptom})

    reopened = _moved(samples, "connectionsOpened")
    if reopened >= limits.reopened:
        hint(
            "connections",
            f"connections reopened {reopened:.0f} times in {span} — keep-alive expiry "
            "shorter than the service's idle timeout? (transport.keepaliveExpiry, "
            "transport.keepWarmSeconds)",
        )
    peak = max(s.values.get("poolInUse", 0.0) for s in samples)
    size = samples[-1].values.get("poolMax", 0.0)
    if size and peak >= size:
        hint("pool", f"pool saturated ({peak:.0f} of {size:.0f} connections in use): "
             "raise transport.maxConnections")  # fmt: skip
    lookups = _moved(samples, "dnsLookups")
    if lookups >= limits.dns_lookups or _moved(samples, "dnsFallbacks") > 0:
        hint("dns", f"DNS answers expiring before refresh: {lookups:.0f} lookups in {span} "
             "(short TTL or failing nameservers; see transport.nameservers)")  # fmt: skip
    # The kinds of failed requests explain the errors themselves: they go
    # first, the most frequent first, ahead of the signals that moved with them.
    causes: list[tuple[float, str, str]] = []
    for name, signal, text in (
        ("rateLimited", "rate_limited", "answers were 429/503 (rate limited): the service "
         "sheds load; raise its quota or the throttle's delays"),
        ("timeouts", "timeout", "requests timed out: the service is slow or overloaded "
         "(transport.readTimeout)"),
        ("connectErrors", "connect", "connections refused or reset: is the service "
         "restarting?"),
        ("tlsErrors", "tls", "TLS handshakes failed: certificate or transport.caFile"),
        ("dnsErrors", "dns", "the endpoint's host did not resolve"),
    ):  # fmt: skip
        moved = _moved(samples, name)
        if moved > 0:
            causes.append((moved, signal, f"{moved:.0f} {text}"))
    causes.sort(key=lambda cause: -cause[0])  # stable: equal counts keep this order
    movers, hints[:] = hints[:], []
    for _moved_by, signal, message in causes:
        hint(signal, message)
    hints.extend(movers)
    if samples[-1].values.get("circuitOpen", 0.0):
        hint("circuit", "circuit breaker open after repeated failures: the service is not "
             "asked until its cooldown passes")  # fmt: skip
    if not hints:
        hint("service", "no transport signal moved: the service itself is slow or failing")
    return hints

"""The ``scopecache/stats`` answer: the server's counters with its parts' state.

``stats_answer`` joins ``ServerStats`` with the L1 store (policy, capacity,
size), the backend's transport counters, the L2 store, the in-flight
streams, the open documents, the problems the user was told about, the
connection pool, the metrics registry and the hints derived from its recent
samples. The metrics endpoint serves and samples the same answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsp_server.hints import DEFAULT_WINDOW as HINT_WINDOW
from lsp_server.hints import diagnose, signal_values
from lsp_server.metrics import pool_state

if TYPE_CHECKING:
    from lsp_server.server import ScopecacheServer


def stats_answer(ls: ScopecacheServer) -> dict[str, Any]:
    """The ``scopecache/stats`` answer of ``ls``."""
    snapshot = ls.stats.snapshot()
    snapshot["cache"] = {
        **ls.store.policy_stats(),
        "policy": ls.store.policy_name,
        "capacity": ls.store.capacity,
        "size": len(ls.store),
    }
    counters = ls.backend.counters() if ls.backend is not None else None
    snapshot["transport"] = {
        "dnsLookups": counters.dns_lookups if counters else 0,
        "connectionsOpened": counters.connections_opened if counters else 0,
        "requests": counters.requests if counters else 0,
        "retries": counters.retries if counters else 0,
        "errorsByKind": dict(counters.errors_by_kind) if counters else {},
        "circuit": counters.circuit if counters else "closed",
        "endpoint": ls.settings.endpoint,
        "dnsFallbacks": counters.dns_fallbacks if counters else 0,
        "streamsReset": counters.streams_reset if counters else 0,
        "ttftMsP50": counters.ttft_ms_p50 if counters else 0.0,
        "ttftMsP95": counters.ttft_ms_p95 if counters else 0.0,
        "protocol": counters.protocol if counters else "",
        "connectionsReused": counters.connections_reused if counters else 0,
        "connectionsClosedByCancel": counters.connections_closed_by_cancel if counters else 0,
        "connectionsClosedByServer": counters.connections_closed_by_server if counters else 0,
        "connectionsRetired": counters.connections_retired if counters else 0,
        "connectWaits": counters.connect_waits if counters else 0,
        "connectionsReady": counters.connections_ready if counters else 0,
    }
    snapshot["provider"] = (
        ls.backend.service() if ls.backend is not None else {}
    ) or {"configured": ls.settings.provider, "detected": None, "path": None}
    snapshot["tokens"] = {
        "prompt": counters.prompt_tokens if counters else 0,
        "evaluated": counters.evaluated_tokens if counters else 0,
        "cached": counters.cached_tokens if counters else 0,
        "generated": counters.generated_tokens if counters else 0,
        "answers": counters.usage_reports if counters else 0,
    }
    if ls.l2_link.store is not None:
        snapshot["l2"] = ls.l2_link.store.stats()
    snapshot["inflight"] = len(ls.inflight)
    snapshot["upstreamCancelled"] = ls.inflight.cancelled_upstream
    snapshot["upstreamCompleted"] = ls.inflight.completed_upstream
    snapshot["wastedChars"] = ls.inflight.wasted_chars
    snapshot["documents"] = len(ls.documents)
    snapshot["languages"] = language_stats(ls)
    snapshot["problems"] = ls.notifier.active()
    snapshot["pool"] = pool_state(ls.backend, ls.settings.transport.max_connections)
    snapshot["metrics"] = ls.metrics.snapshot()
    if ls.metrics.sample_due():
        ls.metrics.add_sample(signal_values(snapshot))
    snapshot["hints"] = diagnose(ls.metrics.window(HINT_WINDOW))
    if ls.metrics_endpoint is not None:
        snapshot["metricsUrl"] = ls.metrics_endpoint.url
    return snapshot


def language_stats(ls: ScopecacheServer) -> dict[str, dict[str, int]]:
    """Per language: open documents, requests, and open documents parsed vs text-only."""
    out: dict[str, dict[str, int]] = {}

    def entry(language: str) -> dict[str, int]:
        return out.setdefault(language, {"documents": 0, "requests": 0, "parsed": 0, "text": 0})

    for doc in ls.documents:
        row = entry(doc.language)
        row["documents"] += 1
        row["parsed" if doc.tree is not None else "text"] += 1
    for language, count in ls.stats.requests_by_language.items():
        entry(language)["requests"] = count
    return dict(sorted(out.items()))

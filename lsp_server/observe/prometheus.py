"""Prometheus exposition of a server's metrics (the optional ``metrics`` extra).

``exposition(stats, registry)`` renders the text format with prometheus-client
from two reads: the ``scopecache/stats`` answer (counters, saturation, cache
and transport state) and the ``MetricsRegistry`` (histograms). Each call
builds a fresh ``CollectorRegistry``, so nothing is shared between servers
or kept at module level. Names follow the Prometheus conventions: a
``scopecache_`` prefix, base units (seconds, bytes), ``_total`` counters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from lsp_server.observe.metrics import Histogram, MetricsRegistry

INSTALL_HINT = "prometheus-client is not installed: pip install 'scopecache[metrics]'"
#: distinct label values per acceptance breakdown (language, scope kind); the rest are ``other``
MAX_LABEL_VALUES = 12
OTHER = "other"
#: the acceptance breakdowns: the label, the stats key, the family names' suffix
ACCEPTANCE_BREAKDOWNS = (
    ("source", "bySource", ""),
    ("language", "byLanguage", "_by_language"),
    ("scope", "byScope", "_by_scope"),
)


class MetricsUnavailableError(RuntimeError):
    """prometheus-client is missing."""


class LabelValues:
    """The label values of the acceptance breakdowns, at most ``cap`` each, sticky.

    A language or scope kind takes its own label value the first time it is
    exposed, while fewer than ``cap`` values of its dimension have one; any
    later value is counted under ``other``. A value keeps its label for the
    life of the server, so every series is a counter that only grows (values
    seen at the same scrape are taken most shown first, then by name).
    """

    def __init__(self, cap: int = MAX_LABEL_VALUES) -> None:
        self.cap = cap
        self._kept: dict[str, set[str]] = {}

    def fold(
        self, dimension: str, groups: Mapping[str, Mapping[str, int]]
    ) -> dict[str, dict[str, int]]:
        """``groups`` (value -> counts) with the values past the cap added up as ``other``."""
        kept = self._kept.setdefault(dimension, set())
        new = sorted(
            (value for value in groups if value not in kept and value != OTHER),
            key=lambda value: (-_count(groups[value], "shown"), value),
        )
        for value in new:
            if len(kept) >= self.cap:
                break
            kept.add(value)
        out: dict[str, dict[str, int]] = {}
        for value, counts in sorted(groups.items()):
            label = value if value in kept else OTHER
            into = out.setdefault(label, {})
            for key, count in counts.items():
                if isinstance(count, int) and not isinstance(count, bool):
                    into[key] = into.get(key, 0) + count
        return out


def _count(counts: Mapping[str, Any], key: str) -> int:
    value = counts.get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _buckets(histogram: Histogram) -> list[tuple[str, float]]:
    return [("+Inf" if b == float("inf") else repr(b), c) for b, c in histogram.cumulative()]


def _families(
    stats: Mapping[str, Any], registry: MetricsRegistry, labels: LabelValues
) -> Iterator[Any]:
    """Every family, one responsibility after the other (``FAMILIES``)."""
    for families in FAMILIES:
        yield from families(stats, registry, labels)


def _request_families(
    stats: Mapping[str, Any], registry: MetricsRegistry, labels: LabelValues
) -> Iterator[Any]:
    """The completion requests and the didChange cost (the ``MetricsRegistry``)."""
    from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

    requests = CounterMetricFamily(
        "scopecache_requests", "Completion requests by method, source and outcome.",
        labels=["method", "source", "outcome"],
    )  # fmt: skip
    for (method, source, outcome), count in sorted(registry.requests.items()):
        requests.add_metric([method, source, outcome], count)
    yield requests
    duration = HistogramMetricFamily(
        "scopecache_request_duration_seconds", "Latency of served requests by source.",
        labels=["source"],
    )  # fmt: skip
    for source, histogram in sorted(registry.request_duration.items()):
        duration.add_metric([source], _buckets(histogram), histogram.sum)
    yield duration
    yield HistogramMetricFamily(
        "scopecache_keystroke_update_seconds", "Time to apply one didChange.",
        buckets=_buckets(registry.keystroke), sum_value=registry.keystroke.sum,
    )  # fmt: skip
    yield CounterMetricFamily(
        "scopecache_stale_rejections", "Suggestions withheld because the buffer moved.",
        value=stats.get("rejectedStale", 0),
    )  # fmt: skip
    held = CounterMetricFamily(
        "scopecache_held_back_suggestions",
        "Suggestions found but not shown, by reason (unsure, lowKept, repeat, whitespace).",
        labels=["reason"],
    )  # fmt: skip
    for reason, count in sorted(stats.get("heldBack", {}).items()):
        held.add_metric([reason], count)
    yield held
    yield CounterMetricFamily(
        "scopecache_accepted", "Suggestions the user accepted.", value=stats.get("accepted", 0)
    )


def _upstream_families(
    stats: Mapping[str, Any], registry: MetricsRegistry, labels: LabelValues
) -> Iterator[Any]:
    """The requests to the completion service and what it answered."""
    from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

    for name, doc, histogram in (
        ("scopecache_upstream_ttft_seconds", "Upstream time to first token.",
         registry.upstream_ttft),
        ("scopecache_upstream_duration_seconds", "Upstream request total time.",
         registry.upstream_duration),
    ):  # fmt: skip
        yield HistogramMetricFamily(name, doc, buckets=_buckets(histogram), sum_value=histogram.sum)
    upstream = CounterMetricFamily(
        "scopecache_upstream_requests", "Upstream requests by status.", labels=["status"]
    )
    for status, count in sorted(registry.upstream_outcomes.items()):
        upstream.add_metric([status], count)
    yield upstream
    reuse = CounterMetricFamily(
        "scopecache_upstream_connection_use", "Upstream requests on a new or reused connection.",
        labels=["connection"],
    )  # fmt: skip
    for kind, count in sorted(registry.upstream_connections.items()):
        reuse.add_metric([kind], count)
    yield reuse
    yield CounterMetricFamily(
        "scopecache_upstream_received_chars", "Characters of suggestion text received.",
        value=registry.upstream_chars,
    )  # fmt: skip
    tokens = CounterMetricFamily(
        "scopecache_upstream_tokens",
        "Tokens the service reported: prompt read, evaluated, reused from its KV cache, generated.",
        labels=["kind"],
    )
    for kind in ("prompt", "evaluated", "cached", "generated"):
        tokens.add_metric([kind], stats.get("tokens", {}).get(kind, 0))
    yield tokens


def _transport_families(
    stats: Mapping[str, Any], registry: MetricsRegistry, labels: LabelValues
) -> Iterator[Any]:
    """The connections, DNS and errors of the transport (``transport`` of the stats)."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    transport = stats.get("transport", {})
    errors = CounterMetricFamily(
        "scopecache_upstream_errors", "Transport errors by kind.", labels=["kind"]
    )
    for kind, count in sorted(transport.get("errorsByKind", {}).items()):
        errors.add_metric([kind], count)
    yield errors
    for name, doc, key in (
        ("scopecache_connections_opened", "Connections opened to the service.",
         "connectionsOpened"),
        ("scopecache_dns_lookups", "DNS queries sent.", "dnsLookups"),
        ("scopecache_dns_fallbacks", "DNS answers from the system resolver fallback.",
         "dnsFallbacks"),
        ("scopecache_streams_reset", "HTTP/2 streams reset by us.", "streamsReset"),
        ("scopecache_connections_reused", "HTTP/1.1 requests sent on a kept-alive connection.",
         "connectionsReused"),
        ("scopecache_connections_closed_by_cancel",
         "HTTP/1.1 connections closed to cancel a stream.", "connectionsClosedByCancel"),
        ("scopecache_connections_closed_by_server",
         "HTTP/1.1 connections the service closed.", "connectionsClosedByServer"),
        ("scopecache_connections_retired",
         "HTTP/1.1 idle connections closed before the service's keep-alive timeout.",
         "connectionsRetired"),
        ("scopecache_connect_waits", "HTTP/1.1 requests that waited for a connect.",
         "connectWaits"),
    ):  # fmt: skip
        yield CounterMetricFamily(name, doc, value=transport.get(key, 0))
    circuit = GaugeMetricFamily(
        "scopecache_circuit_state", "1 for the breaker's current state.", labels=["state"]
    )
    current = str(transport.get("circuit", "closed")).replace("-", "_")
    for state in ("closed", "open", "half_open"):
        circuit.add_metric([state], 1.0 if current == state else 0.0)
    yield circuit
    protocol = GaugeMetricFamily(
        "scopecache_protocol", "1 for the HTTP version the connections speak.",
        labels=["protocol"],
    )  # fmt: skip
    for spoken in ("http/1.1", "h2", "h2c"):
        protocol.add_metric([spoken], 1.0 if transport.get("protocol") == spoken else 0.0)
    yield protocol
    yield GaugeMetricFamily(
        "scopecache_connections_ready", "HTTP/1.1 idle connections ready for a request.",
        value=transport.get("connectionsReady", 0),
    )  # fmt: skip


def _saturation_families(
    stats: Mapping[str, Any], registry: MetricsRegistry, labels: LabelValues
) -> Iterator[Any]:
    """How full the connection pool and the in-flight streams are now."""
    from prometheus_client.core import GaugeMetricFamily

    pool = stats.get("pool", {})
    connections = GaugeMetricFamily(
        "scopecache_pool_connections", "Pool connections by state.", labels=["state"]
    )
    connections.add_metric(["in_use"], pool.get("inUse", 0))
    connections.add_metric(["idle"], pool.get("idle", 0))
    yield connections
    yield GaugeMetricFamily(
        "scopecache_pool_max_connections", "transport.maxConnections.", value=pool.get("max", 0)
    )
    yield GaugeMetricFamily(
        "scopecache_inflight_upstream_requests", "Upstream streams running now.",
        value=stats.get("inflight", 0),
    )  # fmt: skip


def _cache_and_l2_families(
    stats: Mapping[str, Any], registry: MetricsRegistry, labels: LabelValues
) -> Iterator[Any]:
    """The L1 cache and its policy, and the L2 store."""
    return _cache_families(stats.get("cache", {}), stats.get("l2"))


def _acceptance_families(
    stats: Mapping[str, Any], registry: MetricsRegistry, labels: LabelValues
) -> Iterator[Any]:
    """What the developer kept (``acceptance`` of the stats), by source, language and scope."""
    from prometheus_client.core import CounterMetricFamily

    acceptance = stats.get("acceptance", {})
    for dimension, key, suffix in ACCEPTANCE_BREAKDOWNS:
        groups = labels.fold(dimension, acceptance.get(key, {}))
        yield from _acceptance_counters(groups, dimension, suffix)
    kinds = CounterMetricFamily(
        "scopecache_accepts", "Accepts the editor reported, by kind (full, word, line).",
        labels=["kind"],
    )  # fmt: skip
    for kind, count in sorted(acceptance.get("byKind", {}).items()):
        kinds.add_metric([kind], count)
    yield kinds
    muted = CounterMetricFamily(
        "scopecache_muted_suggestions",
        "Suggestions withheld because their source's were kept too little (acceptance.muteBelow).",
        labels=["source"],
    )
    for source, count in sorted(acceptance.get("muted", {}).items()):
        muted.add_metric([source], count)
    yield muted


def _acceptance_counters(
    groups: Mapping[str, Mapping[str, int]], dimension: str, suffix: str
) -> Iterator[Any]:
    """The acceptance counters of one breakdown (``groups``: label value -> counts)."""
    from prometheus_client.core import CounterMetricFamily

    by = f"by {dimension}"
    for name, key, doc in (
        ("scopecache_suggestions_shown", "shown", "Suggestions that went out"),
        ("scopecache_suggestions_accepted", "accepted", "Suggestions accepted in full or in part"),
        ("scopecache_accepted_chars", "acceptedChars", "Characters accepted"),
        (
            "scopecache_suggestions_typed_through",
            "typedThrough",
            "Suggestions typed by hand through half their first line or more",
        ),
    ):
        family = CounterMetricFamily(name + suffix, f"{doc}, {by}.", labels=[dimension])
        for value, counts in groups.items():
            family.add_metric([value], counts.get(key, 0))
        yield family
    retained = CounterMetricFamily(
        "scopecache_retained_chars" + suffix,
        "Accepted characters still in the file after the short (acceptance.shortWindowSeconds) "
        f"or the long window, {by}.",
        labels=[dimension, "window"],
    )
    measured = CounterMetricFamily(
        "scopecache_retained_measured_chars" + suffix,
        "Accepted characters whose short or long window has been counted "
        f"(the denominator of the retained rate), {by}.",
        labels=[dimension, "window"],
    )
    for value, counts in groups.items():
        retained.add_metric([value, "short"], counts.get("retainedChars30s", 0))
        retained.add_metric([value, "long"], counts.get("retainedChars120s", 0))
        measured.add_metric([value, "short"], counts.get("measuredChars30s", 0))
        measured.add_metric([value, "long"], counts.get("measuredChars120s", 0))
    yield retained
    yield measured


def _cache_families(cache: Mapping[str, Any], l2: Mapping[str, Any] | None) -> Iterator[Any]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    policy = str(cache.get("policy", ""))
    yield GaugeMetricFamily("scopecache_cache_entries", "L1 entries.", value=cache.get("size", 0))
    yield GaugeMetricFamily(
        "scopecache_cache_capacity", "L1 capacity (entries).", value=cache.get("capacity", 0)
    )
    evictions = CounterMetricFamily(
        "scopecache_cache_evictions", "L1 evictions by policy region.", labels=["region"]
    )
    regions = cache.get("evictionsByRegion")
    if isinstance(regions, Mapping):
        for region, count in sorted(regions.items()):
            evictions.add_metric([str(region)], count)
    else:
        evictions.add_metric([policy or "all"], cache.get("evictions", 0))
    yield evictions
    arc = GaugeMetricFamily(
        "scopecache_cache_region_entries", "ARC lists: T1/T2 entries, B1/B2 ghosts.",
        labels=["region"],
    )  # fmt: skip
    for region in ("t1", "t2", "b1", "b2"):
        if region in cache:
            arc.add_metric([region], cache[region])
    if isinstance(cache.get("regions"), Mapping):
        for region, size in sorted(cache["regions"].items()):
            if isinstance(size, int | float):
                arc.add_metric([str(region)], size)
    yield arc
    ghosts = CounterMetricFamily(
        "scopecache_cache_ghost_hits", "ARC ghost-list hits.", labels=["list"]
    )
    for name, key in (("b1", "ghostHitsB1"), ("b2", "ghostHitsB2")):
        if key in cache:
            ghosts.add_metric([name], cache[key])
    yield ghosts
    for name, key, doc in (
        ("scopecache_cache_arc_p", "p", "ARC's adaptive target size for T1."),
        ("scopecache_cache_hybrid_alpha", "alpha", "Hybrid policy's context weight."),
    ):
        if isinstance(cache.get(key), int | float):
            yield GaugeMetricFamily(name, doc, value=cache[key])
    for name, key, doc in (
        ("scopecache_cache_hits", "exactHits", "L1 exact hits."),
        ("scopecache_cache_typed_hits", "typedHits", "L1 typed-through hits."),
        ("scopecache_cache_misses", "misses", "L1 misses."),
    ):
        yield CounterMetricFamily(name, doc, value=cache.get(key, 0))
    if l2 is not None:
        yield GaugeMetricFamily("scopecache_l2_entries", "L2 entries.", value=l2.get("size", 0))
        yield GaugeMetricFamily(
            "scopecache_l2_up", "1 while the L2 store answers.",
            value=1.0 if l2.get("state") == "up" else 0.0,
        )  # fmt: skip


#: one function per responsibility, each yielding its metric families; a new
#: group of metrics is a new function here
Families = Callable[[Mapping[str, Any], MetricsRegistry, "LabelValues"], Iterator[Any]]
FAMILIES: tuple[Families, ...] = (
    _request_families,
    _upstream_families,
    _transport_families,
    _saturation_families,
    _cache_and_l2_families,
    _acceptance_families,
)


class _SnapshotCollector:
    def __init__(
        self, stats: Mapping[str, Any], registry: MetricsRegistry, labels: LabelValues
    ) -> None:
        self._stats = stats
        self._registry = registry
        self._labels = labels

    def collect(self) -> Iterator[Any]:
        return _families(self._stats, self._registry, self._labels)


def exposition(
    stats: Mapping[str, Any], registry: MetricsRegistry, labels: LabelValues | None = None
) -> tuple[bytes, str]:
    """The Prometheus text format and its content type; raises ``MetricsUnavailableError``.

    ``labels`` keeps the label values of the acceptance breakdowns from one
    scrape to the next (the endpoint holds one); without it the values are
    capped afresh, by name.
    """
    try:
        from prometheus_client import CollectorRegistry, generate_latest
        from prometheus_client.exposition import CONTENT_TYPE_LATEST
    except ImportError as exc:
        raise MetricsUnavailableError(INSTALL_HINT) from exc
    collectors = CollectorRegistry(auto_describe=False)
    collectors.register(_SnapshotCollector(stats, registry, labels or LabelValues()))
    return generate_latest(collectors), str(CONTENT_TYPE_LATEST)

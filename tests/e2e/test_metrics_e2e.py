"""The metrics endpoint of a real server process against the real reference service."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from lsp_server.kit.client import ServerProcess
from tests.support.conditions import until
from tests.support.reference import ReferenceService

pytestmark = pytest.mark.e2e

URI = "file:///work/project/geometry.py"
TEXT = (
    "class Circle:\n"
    "    def area(self) -> float:\n"
    "        return \n"
    "\n"
    "    def perimeter(self) -> float:\n"
    "        return \n"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def options(service: ReferenceService, port: int, **extra: Any) -> dict[str, Any]:
    return {
        "endpoint": service.url,
        "model": "m",
        "transport": {"caFile": str(service.ca_file)},
        "cache": {"l2": "none"},
        "metricsPort": port,
        **extra,
    }


async def wait_for_endpoint(base: str) -> None:
    async with httpx.AsyncClient() as client:

        async def up() -> bool:
            try:
                return (await client.get(f"{base}/healthz")).status_code == 200
            except httpx.TransportError:
                return False

        await until(up, f"the metrics endpoint {base}")


async def signal_history(base: str) -> list[dict[str, Any]]:
    """The signal samples ``/stats.json`` gives the dashboard (reading it samples when due)."""
    async with httpx.AsyncClient() as client:
        history: list[dict[str, Any]] = (await client.get(f"{base}/stats.json")).json()["history"]
    return history


async def wait_for_samples(
    base: str, what: str, check: Callable[[list[dict[str, Any]]], bool]
) -> None:
    """Wait until the signal history satisfies ``check`` (one sample per second is taken)."""

    async def holds() -> bool:
        return check(await signal_history(base))

    await until(holds, what)


async def drive_completions(server: ServerProcess) -> None:
    """Two misses, two exact hits and one keystroke."""
    server.open(URI, TEXT)
    for _ in range(2):
        assert await server.inline_text(URI, 2, 15)
        assert await server.inline_text(URI, 5, 15)
    server.insert(URI, 3, 0, "#")


async def test_metrics_endpoint_exposes_prometheus_families_and_stats_json(
    shared_reference_service: ReferenceService,
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with ServerProcess(options(shared_reference_service, port)) as server:
        await wait_for_endpoint(base)
        await drive_completions(server)
        stats = await server.stats()
        async with httpx.AsyncClient(base_url=base) as client:
            metrics = await client.get("/metrics")
            page = await client.get("/")
            data = (await client.get("/stats.json")).json()
            missing = await client.get("/nope")

    assert metrics.status_code == 200
    families = {f.name: f for f in text_string_to_metric_families(metrics.text)}
    for name in (
        "scopecache_requests",
        "scopecache_request_duration_seconds",
        "scopecache_upstream_ttft_seconds",
        "scopecache_upstream_duration_seconds",
        "scopecache_keystroke_update_seconds",
        "scopecache_upstream_errors",
        "scopecache_inflight_upstream_requests",
        "scopecache_pool_connections",
        "scopecache_cache_entries",
        "scopecache_cache_evictions",
        "scopecache_connections_opened",
        "scopecache_dns_lookups",
    ):
        assert name in families, name
    assert families["scopecache_requests"].type == "counter"
    assert families["scopecache_request_duration_seconds"].type == "histogram"
    served = {
        s.labels["source"]: s.value
        for s in families["scopecache_requests"].samples
        if s.name == "scopecache_requests_total" and s.labels["outcome"] == "served"
    }
    assert served == {"upstream": 2.0, "exact": 2.0}
    ttft_count = [
        s.value
        for s in families["scopecache_upstream_ttft_seconds"].samples
        if s.name.endswith("_count")
    ]
    assert len(ttft_count) == 1 and ttft_count[0] >= 2  # speculative prefetches count too
    keystrokes = [
        s.value
        for s in families["scopecache_keystroke_update_seconds"].samples
        if s.name.endswith("_count")
    ]
    assert keystrokes[0] >= 1

    assert page.status_code == 200 and "<canvas" in page.text
    assert "cdn" not in page.text.lower() and 'src="http' not in page.text
    assert missing.status_code == 404
    assert data["served"]["upstream"] == 2 and data["history"]
    assert {"hitRatio", "cache", "transport", "hints", "pool"} <= set(data)

    # scopecache/stats keeps the DESIGN.md fields and gains the metrics ones.
    for key in ("requests", "served", "upstreamRequests", "upstreamErrors", "cancelled"):
        assert key in stats
    assert set(stats["latencyMs"]) >= {"p50", "p95", "p99"}
    assert {"policy", "capacity", "size"} <= set(stats["cache"])
    assert {"dnsLookups", "connectionsOpened"} <= set(stats["transport"])
    assert stats["metrics"]["upstreamTtftMs"]["count"] >= 2
    assert stats["metrics"]["requestsByOutcome"]["served"] == 4
    assert stats["hints"] == []
    assert stats["metricsUrl"] == base


async def test_upstream_errors_produce_root_cause_hints(
    shared_reference_service: ReferenceService,
) -> None:
    service = shared_reference_service
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with ServerProcess(options(service, port)) as server:
        await wait_for_endpoint(base)
        # Hints compare samples: one before the errors ...
        await wait_for_samples(base, "a signal sample", lambda history: len(history) >= 1)
        server.open(URI, TEXT)
        service.set_fault("status", count=-1, status=429)
        try:
            for line in (2, 5):
                await server.inline_text(URI, line, 15)
            errors = (await server.stats())["upstreamErrors"]
            # ... and one after them.
            await wait_for_samples(
                base,
                "a signal sample after the upstream errors",
                lambda history: history[-1]["upstreamErrors"] >= errors,
            )
        finally:
            service.clear_faults()
        stats = await server.stats()
        async with httpx.AsyncClient() as client:
            metrics = (await client.get(f"http://127.0.0.1:{port}/metrics")).text

    assert stats["upstreamErrors"] >= 1
    signals = {hint["signal"] for hint in stats["hints"]}
    assert "rate_limited" in signals, stats["hints"]
    assert all("upstream errors" in hint["symptom"] for hint in stats["hints"])
    errors = {
        s.labels["kind"]: s.value
        for f in text_string_to_metric_families(metrics)
        if f.name == "scopecache_upstream_errors"
        for s in f.samples
    }
    assert errors.get("rate_limited", 0) >= 1
    outcomes = {
        (s.labels["source"], s.labels["outcome"])
        for f in text_string_to_metric_families(metrics)
        if f.name == "scopecache_requests"
        for s in f.samples
    }
    assert ("upstream", "error") in outcomes


async def test_metrics_endpoint_is_off_by_default_and_on_loopback_when_on(
    shared_reference_service: ReferenceService,
) -> None:
    async with ServerProcess(options(shared_reference_service, 0)) as server:
        stats = await server.stats()
        assert "metricsUrl" not in stats
        port = free_port()
        server.configure(options(shared_reference_service, port))
        await wait_for_endpoint(f"http://127.0.0.1:{port}")
        stats = await server.stats()
        assert stats["metricsUrl"] == f"http://127.0.0.1:{port}"
        with socket.socket() as probe:
            probe.settimeout(1.0)
            # Not bound on the wildcard address: another local address is refused.
            assert probe.connect_ex(("127.0.0.2", port)) != 0
    json.dumps(stats)  # the whole answer is plain JSON


async def test_a_second_window_on_a_taken_metrics_port_is_told_where_the_numbers_are(
    shared_reference_service: ReferenceService,
) -> None:
    port = free_port()
    opts = options(shared_reference_service, port)
    async with ServerProcess(opts) as first:
        await wait_for_endpoint(f"http://127.0.0.1:{port}")
        async with ServerProcess(opts) as second:

            async def told() -> bool:
                return any("cannot serve metrics" in m.message for m in second.messages)

            await until(told, "the second window to report the taken port")
            message = next(m.message for m in second.messages if "metrics" in m.message)
            assert "in use" in message
            assert f"http://127.0.0.1:{port}/" in message  # the other window's numbers
            assert "metricsPort" in message and "l2 in scopecache/stats" in message
        assert (await first.stats())["metricsUrl"].endswith(f":{port}")


async def test_acceptance_is_scraped_by_source_language_and_scope_kind(
    shared_reference_service: ReferenceService,
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with ServerProcess(options(shared_reference_service, port)) as server:
        await wait_for_endpoint(base)
        await drive_completions(server)
        item = await server.inline(URI, 2, 15)
        assert item is not None and item.command is not None and item.command.arguments
        assert isinstance(item.insert_text, str)
        server.insert(URI, 2, 15, item.insert_text)
        assert await server.accepted(item.command.arguments[0]) == {"known": True}
        acceptance = (await server.stats())["acceptance"]
        async with httpx.AsyncClient(base_url=base) as client:
            metrics = await client.get("/metrics")
    families = {f.name: f for f in text_string_to_metric_families(metrics.text)}

    def totals(name: str, label: str) -> dict[str, float]:
        return {
            s.labels[label]: s.value for s in families[name].samples if s.name.endswith("_total")
        }

    # the same numbers as scopecache/stats, broken down three ways
    for suffix, label, key in (
        ("", "source", "bySource"),
        ("_by_language", "language", "byLanguage"),
        ("_by_scope", "scope", "byScope"),
    ):
        shown = totals(f"scopecache_suggestions_shown{suffix}", label)
        accepted = totals(f"scopecache_suggestions_accepted{suffix}", label)
        assert shown == {k: v["shown"] for k, v in acceptance[key].items()}, label
        assert accepted == {k: v["accepted"] for k, v in acceptance[key].items()}, label
    assert totals("scopecache_suggestions_accepted_by_language", "language") == {"python": 1}
    assert sum(totals("scopecache_accepted_chars_by_scope", "scope").values()) == len(
        item.insert_text
    )

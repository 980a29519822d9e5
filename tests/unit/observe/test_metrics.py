"""The metrics registry, its Prometheus exposition, and the root-cause hints."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from lsp_server.observe.hints import HintThresholds, diagnose, signal_values
from lsp_server.observe.metrics import Histogram, MetricsRegistry, timed_stream
from lsp_server.observe.prometheus import exposition
from transport.backend import CompletionRequest, StaticBackend


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_histogram_buckets_are_cumulative_and_percentiles_in_ms() -> None:
    h = Histogram((0.001, 0.01, 0.1))
    for value in (0.0005, 0.002, 0.003, 0.05, 2.0):
        h.observe(value)
    assert h.cumulative() == [(0.001, 1), (0.01, 3), (0.1, 4), (float("inf"), 5)]
    assert h.count == 5 and h.sum == pytest.approx(2.0555)
    assert h.percentile_ms(50) == 3.0


def test_registry_counts_requests_by_method_source_and_outcome() -> None:
    m = MetricsRegistry()
    m.record_request("inline", "exact", "served", 0.001)
    m.record_request("inline", "upstream", "served", 0.2)
    m.record_request("completion", "none", "empty", 0.0)
    m.record_request("inline", "none", "cancelled", 0.0)
    snap = m.snapshot()
    assert snap["requestsByOutcome"] == {"served": 2, "empty": 1, "cancelled": 1, "error": 0}
    assert snap["requestsByMethod"] == {"inline": 3, "completion": 1}
    assert set(snap["latencyBySourceMs"]) == {"exact", "upstream"}  # served only
    assert snap["latencyBySourceMs"]["upstream"]["p50"] == 200.0


def test_history_samples_once_per_interval_and_windows_by_clock() -> None:
    clock = FakeClock()
    m = MetricsRegistry(clock=clock, wall_clock=clock, sample_interval=1.0, history=3)
    assert m.sample_due()
    m.add_sample({"requests": 1})
    assert not m.sample_due()
    for t in (1.0, 2.0, 3.0):
        clock.now = t
        assert m.sample_due()
        m.add_sample({"requests": t})
    assert [s.t for s in m.history] == [1.0, 2.0, 3.0]  # bounded
    assert [s.t for s in m.window(1.5)] == [2.0, 3.0]
    assert m.history_json()[-1] == {"t": 3.0, "requests": 3.0}


async def test_timed_stream_records_ttft_size_and_logs_one_line_without_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    m = MetricsRegistry()
    backend = StaticBackend("secret_prompt_answer", chunk_size=5)
    request = CompletionRequest(prefix="def secret_prefix", suffix="", request_id="r7")
    with caplog.at_level(logging.DEBUG, logger="lsp_server.observe.metrics"):
        chunks = [c async for c in timed_stream(backend, request, m)]
    assert "".join(chunks) == "secret_prompt_answer"
    assert m.upstream_ttft.count == 1 and m.upstream_duration.count == 1
    assert m.upstream_outcomes == {"ok": 1} and m.upstream_chars == 20
    assert m.upstream_connections == {"reused": 1}
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "id=r7" in lines[0] and "status=ok" in lines[0]
    assert "secret" not in lines[0]


async def test_timed_stream_counts_an_abandoned_stream_as_cancelled() -> None:
    m = MetricsRegistry()
    stream = timed_stream(StaticBackend("abcdefgh", chunk_size=2), CompletionRequest(
        prefix="x", suffix=""), m)  # fmt: skip
    assert await stream.__anext__() == "ab"
    await stream.aclose()  # type: ignore[attr-defined]
    assert m.upstream_outcomes == {"cancelled": 1}


def stats(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "requests": 0,
        "served": {"exact": 0, "upstream": 0},
        "upstreamRequests": 0,
        "upstreamErrors": 0,
        "transport": {"connectionsOpened": 1, "dnsLookups": 2, "errorsByKind": {}},
        "pool": {"inUse": 0, "idle": 1, "max": 4},
    }
    base.update(overrides)
    return base


def samples(*snapshots: dict[str, Any]) -> list[Any]:
    clock = FakeClock()
    m = MetricsRegistry(clock=clock, wall_clock=clock)
    for i, snap in enumerate(snapshots):
        clock.now = float(i * 30)
        m.add_sample(signal_values(snap))
    return list(m.history)


def test_no_breach_no_hints_even_if_connections_churn() -> None:
    quiet = samples(stats(upstreamRequests=10), stats(
        upstreamRequests=20, transport={"connectionsOpened": 9, "dnsLookups": 2}))  # fmt: skip
    assert diagnose(quiet) == []


def test_error_breach_names_the_signals_that_moved() -> None:
    before = stats(upstreamRequests=10)
    after = stats(
        upstreamRequests=30,
        upstreamErrors=6,
        transport={
            "connectionsOpened": 15,
            "dnsLookups": 20,
            "errorsByKind": {"rate_limited": 4, "timeout": 2},
            "circuit": "open",
        },
        pool={"inUse": 4, "idle": 0, "max": 4},
    )
    hints = diagnose(samples(before, after))
    by_signal = {h["signal"]: h["message"] for h in hints}
    assert set(by_signal) == {"connections", "pool", "dns", "rate_limited", "timeout", "circuit"}
    assert by_signal["connections"].startswith("connections reopened 14 times in 30 s")
    assert "raise transport.maxConnections" in by_signal["pool"]
    assert "DNS answers expiring before refresh" in by_signal["dns"]
    assert all("upstream errors 6 of 20 (30%)" in h["symptom"] for h in hints)


def test_the_hint_that_explains_the_errors_comes_before_the_churn_they_caused() -> None:
    # A TLS failure: every attempt opens a new connection, and every one fails.
    before = stats(upstreamRequests=10)
    after = stats(
        upstreamRequests=16,
        upstreamErrors=6,
        transport={"connectionsOpened": 7, "dnsLookups": 2, "errorsByKind": {"tls": 6}},
    )
    hints = diagnose(samples(before, after))
    assert [h["signal"] for h in hints] == ["tls", "connections"]
    assert "transport.caFile" in hints[0]["message"]


def test_error_kinds_are_ranked_by_how_many_errors_they_explain() -> None:
    after = stats(
        upstreamRequests=30,
        upstreamErrors=9,
        transport={"connectionsOpened": 1, "dnsLookups": 2,
                   "errorsByKind": {"rate_limited": 1, "timeout": 8}},
    )  # fmt: skip
    hints = diagnose(samples(stats(upstreamRequests=10), after))
    assert [h["signal"] for h in hints] == ["timeout", "rate_limited"]


def test_slow_first_token_without_transport_movement_blames_the_service() -> None:
    slow = stats(metrics={"upstreamTtftMs": {"p95": 4000.0}})
    hints = diagnose(samples(stats(), slow), thresholds=HintThresholds(ttft_p95_ms=1000))
    assert [h["signal"] for h in hints] == ["service"]
    assert "time to first token p95 4000 ms" in hints[0]["symptom"]


def test_prometheus_exposition_parses_with_conventional_names() -> None:
    m = MetricsRegistry()
    m.record_request("inline", "typed", "served", 0.002)
    m.record_keystroke(0.0003)
    snap = stats(
        cache={"policy": "hybrid", "size": 3, "capacity": 8, "alpha": 0.5, "p": 1.0,
               "regions": {"hot": 1, "t1": 2}, "evictionsByRegion": {"hot": 1, "arc": 2},
               "ghostHitsB1": 1, "ghostHitsB2": 0},
        l2={"kind": "sqlite", "state": "up", "size": 5},
        inflight=1,
    )  # fmt: skip
    body, content_type = exposition(snap, m)
    assert content_type.startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    assert families["scopecache_request_duration_seconds"].type == "histogram"
    samples_by_name = {s.name: s for f in families.values() for s in f.samples}
    assert samples_by_name["scopecache_keystroke_update_seconds_count"].value == 1
    assert samples_by_name["scopecache_l2_entries"].value == 5
    assert samples_by_name["scopecache_cache_hybrid_alpha"].value == 0.5
    evictions = {s.labels["region"]: s.value for s in families["scopecache_cache_evictions"].samples
                 if s.name.endswith("_total")}  # fmt: skip
    assert evictions == {"arc": 2, "hot": 1}
    for name, family in families.items():
        assert name.startswith("scopecache_")
        if family.type == "counter":
            assert all(s.name.endswith(("_total", "_created")) for s in family.samples)


def test_token_numbers_the_service_reported_are_prometheus_counters_by_kind() -> None:
    snap = stats(tokens={"prompt": 120, "evaluated": 20, "cached": 100, "generated": 16})
    body, _ = exposition(snap, MetricsRegistry())
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    tokens = {s.labels["kind"]: s.value for s in families["scopecache_upstream_tokens"].samples
              if s.name.endswith("_total")}  # fmt: skip
    assert tokens == {"prompt": 120, "evaluated": 20, "cached": 100, "generated": 16}


def test_acceptance_by_source_is_exported_as_counters() -> None:
    counts = {
        "shown": 4, "accepted": 2, "acceptedChars": 30, "retainedChars30s": 24,
        "retainedChars120s": 20, "measuredChars30s": 30, "measuredChars120s": 30,
    }  # fmt: skip
    acceptance = {
        "bySource": {"exact": counts},
        "byKind": {"full": 1, "word": 1, "line": 0},
        "muted": {"upstream": 3},
    }
    body, _ = exposition(stats(acceptance=acceptance), MetricsRegistry())
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}

    def values(name: str) -> dict[tuple[str, ...], float]:
        return {
            tuple(s.labels.values()): s.value
            for s in families[name].samples
            if s.name.endswith("_total")
        }

    assert values("scopecache_suggestions_shown") == {("exact",): 4}
    assert values("scopecache_suggestions_accepted") == {("exact",): 2}
    assert values("scopecache_accepted_chars") == {("exact",): 30}
    assert values("scopecache_retained_chars") == {("exact", "short"): 24, ("exact", "long"): 20}
    assert values("scopecache_retained_measured_chars")[("exact", "long")] == 30
    assert values("scopecache_accepts")[("word",)] == 1
    assert values("scopecache_muted_suggestions") == {("upstream",): 3}

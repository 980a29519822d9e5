"""Suggestions held back, by reason, in the Prometheus exposition."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from lsp_server.observe.metrics import MetricsRegistry
from lsp_server.observe.prometheus import exposition
from lsp_server.observe.stats import ServerStats


def test_held_back_suggestions_are_exported_by_reason() -> None:
    stats = ServerStats()
    stats.held_back["unsure"] += 3
    stats.held_back["repeat"] += 1
    body, _ = exposition(stats.snapshot(), MetricsRegistry())
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    samples = {
        s.labels["reason"]: s.value
        for s in families["scopecache_held_back_suggestions"].samples
        if s.name.endswith("_total")
    }
    assert samples == {"unsure": 3.0, "lowKept": 0.0, "repeat": 1.0, "whitespace": 0.0}


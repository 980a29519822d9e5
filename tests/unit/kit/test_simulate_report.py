"""``scopecache simulate``'s tables: every column readable and explained."""

from __future__ import annotations

import io

from rich.console import Console

from lsp_server.kit.simulate.report import render_table, render_timed_table
from lsp_server.kit.simulate.timed import TimedResult
from lsp_server.kit.simulate.untimed import DesignResult


def rendered(draw: object, width: int = 80) -> str:
    console = Console(width=width, record=True, file=io.StringIO())
    draw(console)  # type: ignore[operator]
    return console.export_text()


def test_a_long_design_name_is_shown_whole_in_a_narrow_terminal() -> None:
    results = [
        DesignResult(strategy="uri-prefix-suffix", requests=10, hits=5, upstream=5),
        DesignResult(strategy="scope", policy="hybrid", capacity=64, requests=10, hits=8),
    ]
    text = rendered(lambda console: render_table(results, console), width=70)
    assert "uri-prefix-suffix" in text


def test_the_untimed_table_explains_a_stale_serve() -> None:
    results = [DesignResult(strategy="scope", policy="lru", capacity=4, requests=3, stale=1)]
    text = " ".join(rendered(lambda console: render_table(results, console)).split())
    assert "stale: a served suggestion that still fits the line" in text
    assert "final check" in text


def test_the_timed_table_has_a_legend_and_latency_units() -> None:
    results = [TimedResult(design="ours", ttft_ms=300.0, requests=4, latencies=[1.0, 2.0])]
    text = " ".join(
        rendered(lambda console: render_timed_table(results, console, token_ms=20), 130).split()
    )
    assert "p50 ms" in text and "p95 ms" in text
    for short in ("<next:", "up / done / cxl / spec:", "wasted / w.chars:", "stale:"):
        assert short in text, short

"""The demo's results table: every figure says what it counts."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from lsp_server.kit.demo import demo_table


def run(served: dict[str, int], empty: int, hit_ms: float, miss_ms: float) -> dict[str, Any]:
    def split(ms: float) -> dict[str, float]:
        return {"p50": ms, "p95": ms, "p99": ms}

    return {
        "requests": sum(served.values()) + empty,
        "served": served,
        "empty": empty,
        "useful": 1,
        "upstreamRequests": served.get("upstream", 0),
        "latencyMs": {"hit": split(hit_ms), "miss": split(miss_ms), "all": split(miss_ms)},
        "instant": 0.5,
        "connectionsOpened": 1,
        "dnsLookups": 1,
        "wallSeconds": 1.0,
    }


REPORT = {
    "trace": {"requests": 4, "events": 9, "seed": 7},
    "service": {"ttftMs": 30.0, "tokenMs": 2.0},
    "runs": {
        "cached": run({"exact": 2, "typed": 1, "upstream": 1}, 0, 0.4, 35.0),
        "uncached": run({"upstream": 4}, 0, 0.0, 35.0),
    },
}


def rendered() -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(demo_table(REPORT))
    return console.export_text()


def test_a_run_without_hits_shows_a_dash_instead_of_zero_latency() -> None:
    hit_row = next(line for line in rendered().splitlines() if "hit latency" in line)
    cells = [c.strip() for c in hit_row.split("│") if c.strip()]
    assert cells[1:] == ["0.4 / 0.4", "-"]


def test_the_table_explains_each_source_in_one_line() -> None:
    text = " ".join(rendered().split())
    for source in ("exact:", "typed:", "inflight:", "speculative:", "upstream:"):
        assert source in text

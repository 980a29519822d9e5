"""``scopecache replay`` through the real server and the reference service."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server.replay import replay_trace
from lsp_server.synth import sample_files, synthesize
from lsp_server.trace import Trace
from lsp_server.trace_writer import write_trace

pytestmark = pytest.mark.e2e

SOURCES = ("exact", "typed", "inflight", "l2", "upstream", "speculative")


def small_trace(lines: int = 12) -> Trace:
    path = sample_files()[0]
    head = "\n".join(path.read_text().split("\n")[:lines]) + "\n"
    return synthesize({f"file:///t/{path.name}": head}, seed=5)


async def test_replay_counts_add_up_and_match_the_service() -> None:
    trace = small_trace()
    # Without prefetch every upstream request is one the editor asked for; a
    # prefetch cancelled before it left the process would count here but
    # never reach the service (the timed replay test covers prefetch).
    result = await replay_trace(
        trace, settings={"cache": {"l2": "none"}, "speculative": {"enabled": False}}
    )
    summary = result.summary()
    assert summary["requests"] == sum(1 for e in trace.events if getattr(e, "op", "") == "complete")
    assert summary["requests"] == (
        sum(summary["served"].values())
        + summary["empty"]
        + summary["errors"]
        + summary["cancelled"]
    )
    assert summary["upstreamRequests"] == summary["serviceRequests"]
    assert summary["served"]["upstream"] >= 1
    assert summary["served"]["typed"] > summary["served"]["upstream"]
    assert summary["useful"] <= sum(summary["served"].values())


def test_replay_json_has_the_documented_shape(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(path, small_trace(6))
    out = subprocess.run(
        [sys.executable, "-m", "lsp_server", "replay", str(path), "--json", "--policy", "lru"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    data = json.loads(out.stdout)
    for field in (
        "requests",
        "served",
        "upstreamRequests",
        "useful",
        "empty",
        "latencyMs",
        "wallSeconds",
        "settings",
    ):
        assert field in data
    assert set(data["served"]) == set(SOURCES)
    for split in ("hit", "miss", "all"):
        assert set(data["latencyMs"][split]) == {"p50", "p95", "p99"}
    assert data["settings"]["cache"]["policy"] == "lru"


def test_simulate_json_has_the_documented_shape(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(path, small_trace(6))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "lsp_server",
            "simulate",
            str(path),
            "--json",
            "--policies",
            "lru,hybrid,opt",
            "--capacities",
            "4,16",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    data = json.loads(out.stdout)
    assert data["capacities"] == [4, 16]
    assert set(data["policies"]) == {"lru", "hybrid", "opt"}
    for figures in data["policies"].values():
        assert len(figures["hitRatio"]) == 2 and len(figures["upstreamRequests"]) == 2
    for i in range(2):
        assert data["policies"]["opt"]["hitRatio"][i] >= data["policies"]["lru"]["hitRatio"][i]

"""``scopecache replay`` through the real server and the reference service."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server.kit.replay import replay_trace
from lsp_server.kit.synth.session import sample_files, synthesize
from lsp_server.kit.upstream_process import ReferenceProcess
from lsp_server.observe.trace.format import Trace
from lsp_server.observe.trace.writer import write_trace
from tests.support.greet import requests_seen

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


def replay_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", "replay", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_replay_uses_the_endpoint_and_ca_file_of_its_config(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    write_trace(trace, small_trace(6))
    async with ReferenceProcess([str(sample_files()[0])]) as service:
        config = tmp_path / "team.toml"
        config.write_text(
            "[scopecache]\n"
            f'endpoint = "{service.url}"\nmodel = "m"\n'
            "[scopecache.speculative]\nenabled = false\n"
            "[scopecache.transport]\n"
            f'ca_file = "{service.ca_file}"\n'
        )
        out = await asyncio.to_thread(replay_cli, str(trace), "--config", str(config), "--json")
        seen = requests_seen(await service.stats())
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["upstreamErrors"] == 0
    assert data["served"]["upstream"] >= 1
    assert "serviceRequests" not in data  # no reference service of its own was started
    assert seen == data["upstreamRequests"]
    assert "caFile" not in data["settings"].get("transport", {})


def test_replay_against_a_down_endpoint_shows_the_errors_and_exits_1(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    write_trace(trace, small_trace(4))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once the socket is closed
    out = replay_cli(str(trace), "--endpoint", f"http://127.0.0.1:{port}/v1")
    assert out.returncode == 1, out.stderr
    assert "errors (answers / upstream)" in out.stdout
    assert "requests failed" in out.stderr


def test_replay_rejects_an_unknown_policy_like_simulate(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    write_trace(trace, small_trace(4))
    out = replay_cli(str(trace), "--policy", "lruu", "--json")
    assert out.returncode == 2
    assert "unknown policy 'lruu'" in out.stderr and "hybrid" in out.stderr
    assert out.stdout == ""


def test_replay_of_a_file_that_is_not_a_trace_says_so(tmp_path: Path) -> None:
    not_a_trace = tmp_path / "notes.txt"
    not_a_trace.write_text("just some notes\n")
    out = replay_cli(str(not_a_trace))
    assert out.returncode == 2
    assert "not a scopecache-trace file" in " ".join(out.stderr.split())

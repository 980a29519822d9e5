"""``scopecache slo check``: objectives, sources, baselines, and a real replay gate."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from lsp_server.cli import main
from lsp_server.kit.replay import replay_trace
from lsp_server.kit.synth.session import synthesize
from lsp_server.observe.endpoint import MetricsEndpoint
from lsp_server.observe.metrics import MetricsRegistry
from lsp_server.observe.slo import (
    Objective,
    SloError,
    evaluate,
    load_objectives,
    load_source,
    metric_values,
)

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "slo.toml"

STATS: dict[str, Any] = {
    "requests": 10,
    "served": {"exact": 4, "typed": 2, "inflight": 0, "l2": 0, "upstream": 2, "speculative": 0},
    "upstreamRequests": 4,
    "upstreamErrors": 1,
    "rejectedStale": 0,
    "latencyMs": {"p50": 1.0, "p95": 9.0, "p99": 12.0, "hit": {"p95": 2.0}, "miss": {"p95": 30}},
    "transport": {"connectionsOpened": 1},
}


def write(tmp_path: Path, name: str, data: Any) -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_metric_values_derive_ratios_and_latencies_from_stats() -> None:
    values = metric_values(STATS)
    assert values["hitRatio"] == 0.6
    assert values["upstreamRequestRatio"] == 0.4
    assert values["upstreamErrorRatio"] == 0.25
    assert values["hitLatencyP95Ms"] == 2.0
    assert values["missLatencyP95Ms"] == 30.0
    assert values["latencyP95Ms"] == 9.0


def test_metric_values_read_replay_json_with_all_latencies() -> None:
    replay = {**STATS, "useful": 3, "latencyMs": {"all": {"p95": 5.0}, "hit": {"p95": 1.0}}}
    del replay["upstreamErrors"]
    values = metric_values(replay)
    assert values["latencyP95Ms"] == 5.0
    assert values["usefulRatio"] == 0.375
    assert "upstreamErrorRatio" not in values


def test_breach_missing_and_optional_objectives() -> None:
    objectives = [
        Objective(name="hits", metric="hitRatio", op=">=", value=0.8),
        Objective(name="conns", metric="transport.connectionsOpened", op="<=", value=2),
        Objective(name="absent", metric="nothing.here", op="==", value=0),
        Objective(name="absent ok", metric="nothing.here", op="==", value=0, optional=True),
    ]
    statuses = [v.status for v in evaluate(objectives, STATS)]
    assert statuses == ["BREACH", "ok", "MISSING", "skipped"]


def test_baseline_flags_regressions_beyond_tolerance_only() -> None:
    hits = Objective(name="hits", metric="hitRatio", op=">=", value=0.1)
    latency = Objective(name="p95", metric="latencyP95Ms", op="<=", value=100, slack=1.0)
    baseline = {**STATS, "served": {**STATS["served"], "exact": 5}}  # hit ratio 0.7
    slower = {**STATS, "latencyMs": {**STATS["latencyMs"], "p95": 9.5}}
    assert [v.status for v in evaluate([hits], STATS, baseline=baseline, tolerance=0.1)] == [
        "REGRESSION"
    ]
    assert [v.status for v in evaluate([hits], STATS, baseline=baseline, tolerance=0.2)] == ["ok"]
    # 9.0 -> 9.5 ms is within the objective's 1 ms slack.
    assert [v.status for v in evaluate([latency], slower, baseline=STATS)] == ["ok"]


def test_bad_slo_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SloError, match="no \\[\\[objective\\]\\]"):
        load_objectives(write(tmp_path, "empty.toml", "title = 'x'\n"))
    bad_op = '[[objective]]\nmetric = "hitRatio"\nop = "~"\nvalue = 1\n'
    with pytest.raises(SloError, match="op must be one of"):
        load_objectives(write(tmp_path, "op.toml", bad_op))
    assert main(["slo", "check", "--slo", str(EXAMPLE), "--from", str(tmp_path / "no.json")]) == 2


def test_example_slo_file_loads() -> None:
    names = [o.metric for o in load_objectives(EXAMPLE)]
    assert "hitRatio" in names and "hitLatencyP95Ms" in names


async def test_source_can_be_a_running_servers_stats_json_url() -> None:
    endpoint = MetricsEndpoint(lambda: dict(STATS), MetricsRegistry(), host="127.0.0.1", port=0)
    await endpoint.start()
    try:
        data = await asyncio.to_thread(load_source, f"{endpoint.url}/stats.json")
    finally:
        await endpoint.aclose()
    assert data["requests"] == 10 and data["history"] == []


SOURCE = """def area(width, height):
    result = width * height
    return round(result, 2)
"""


@pytest.mark.e2e
async def test_slo_check_passes_a_good_replay_and_fails_one_without_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = synthesize({"file:///w/a.py": SOURCE, "file:///w/b.py": SOURCE}, seed=3)
    runs = {}
    for policy in ("hybrid", "none"):
        result = await replay_trace(trace, settings={"cache": {"policy": policy, "l2": "none"}})
        runs[policy] = write(tmp_path, f"{policy}.json", result.summary())
    capsys.readouterr()

    args = ["slo", "check", "--slo", str(EXAMPLE), "--from"]
    assert await asyncio.to_thread(main, [*args, runs["hybrid"]]) == 0
    assert "all" in capsys.readouterr().out

    assert await asyncio.to_thread(main, [*args, runs["none"]]) == 1
    out = capsys.readouterr().out
    assert "BREACH" in out and "hit ratio" in out and "objectives failed" in out

    # Against the good run as a baseline, the cacheless run is also a regression.
    regress = [*args, runs["none"], "--baseline", runs["hybrid"], "--tolerance", "0.1"]
    assert await asyncio.to_thread(main, regress) == 1

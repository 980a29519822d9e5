"""A timed replay: real pacing, real cancellation, speculative answers at line starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.kit.replay import replay_trace
from lsp_server.kit.simulate.timed import CHARS_PER_TOKEN, LatencyModel, collect_timed, run_design
from lsp_server.kit.synth.session import sample_files, synthesize
from lsp_server.observe.trace.writer import write_trace

pytestmark = pytest.mark.e2e

#: replay this many times faster than the synthesized typist
SPEED = 6.0
BUDGET = 30


async def test_timed_replay_serves_speculative_answers_within_the_budget() -> None:
    path = sample_files()[1]
    head = "\n".join(path.read_text().split("\n")[:14]) + "\n"
    trace = synthesize({f"file:///t/{path.name}": head}, seed=2)
    result = await replay_trace(
        trace,
        settings={"cache": {"l2": "none"}, "speculative": {"maxPerMinute": BUDGET}},
        speed=SPEED,
        ttft_ms=60.0,
        token_ms=2.0,
    )
    summary = result.summary()
    assert summary["served"]["speculative"] >= 1
    minutes = result.wall_seconds / 60.0
    assert summary["upstream"]["speculative"] <= BUDGET * max(1.0, minutes + 1)
    # the time-aware figures are there and add up
    assert 0.0 < summary["instant"] <= 1.0
    assert summary["requests"] == (
        sum(summary["served"].values())
        + summary["empty"]
        + summary["errors"]
        + summary["cancelled"]
    )
    up = summary["upstream"]
    # every started stream either reached the service or was cancelled before it
    # left; every completed one did reach it
    assert up["started"] >= summary["serviceRequests"] >= up["completed"] >= 1
    assert up["started"] - summary["serviceRequests"] <= up["cancelled"]


#: the service's latency for the model check, wall time (the replay runs at the trace's pace)
CHECK_TTFT_MS = 600.0
CHECK_TOKEN_MS = 20.0
#: how far simulate --timed's upstream request count may be from the real run's
CHECK_TOLERANCE = 0.25


async def test_simulate_timed_predicts_the_upstream_requests_of_a_real_replay(
    tmp_path: Path,
) -> None:
    """``simulate --timed`` (ours) against the real server replaying the same trace.

    The replay runs at the typist's own pace against the reference service
    with the same latency, so the server's pacing, turns, grace and
    speculation meet real time; the simulation plays the same trace in
    trace time. Their upstream request counts agree within
    ``CHECK_TOLERANCE`` (or two requests, on a short trace).
    """
    path = sample_files()[1]
    head = "\n".join(path.read_text().split("\n")[:12]) + "\n"
    trace = synthesize({f"file:///t/{path.name}": head}, seed=2)
    written = tmp_path / "t.jsonl"
    write_trace(written, trace)
    latency = LatencyModel(
        ttft=CHECK_TTFT_MS / 1000.0, char_time=CHECK_TOKEN_MS / 1000.0 / CHARS_PER_TOKEN
    )
    simulated = run_design("ours", collect_timed(written), latency)
    real = await replay_trace(
        trace,
        settings={"cache": {"l2": "none"}},
        speed=1.0,
        ttft_ms=CHECK_TTFT_MS,
        token_ms=CHECK_TOKEN_MS,
    )
    asked = real.summary()["serviceRequests"]
    print(f"upstream requests: simulated {simulated.started}, real {asked}")  # for -rP
    assert asked > 0
    assert abs(simulated.started - asked) <= max(2, CHECK_TOLERANCE * asked), (
        simulated.to_json(),
        real.summary(),
    )

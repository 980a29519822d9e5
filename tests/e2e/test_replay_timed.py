"""A timed replay: real pacing, real cancellation, speculative answers at line starts."""

from __future__ import annotations

import pytest

from lsp_server.kit.replay import replay_trace
from lsp_server.kit.synth.session import sample_files, synthesize

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

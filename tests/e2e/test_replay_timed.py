"""A timed replay: real pacing, real cancellation, speculative answers at line starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.kit.replay import REFERENCE_MODEL, replay_trace
from lsp_server.kit.simulate.timed import CHARS_PER_TOKEN, LatencyModel, collect_timed, run_design
from lsp_server.kit.synth.session import sample_files, synthesize
from lsp_server.kit.upstream_process import ReferenceProcess
from lsp_server.observe.trace.writer import write_trace
from transport.cost import LOCAL_SERVER, REMOTE_SERVICE

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



#: how far simulate --timed's upstream request count may be from the real run's
CHECK_TOLERANCE = 0.25


@pytest.mark.parametrize(
    ("identify_as", "ttft_ms", "token_ms"),
    [("openai", 600.0, 20.0), ("llamacpp", 3000.0, 60.0)],
)
async def test_simulate_timed_predicts_the_upstream_requests_of_a_real_replay(
    tmp_path: Path, identify_as: str, ttft_ms: float, token_ms: float
) -> None:
    """``simulate --timed`` (ours) against the real server replaying the same trace.

    The replay runs at the typist's own pace against the reference service
    with the same latency, as a hosted service (OpenAI-compatible) or as a
    local llama.cpp server (``--identify-as llamacpp``: the server detects
    it and applies that cost model: doomed streams, the idle rule, turns),
    so the server's pacing, turns, grace and speculation meet real time;
    the simulation plays the same trace in trace time against the same
    cost model. Their upstream request counts agree within
    ``CHECK_TOLERANCE`` (or two requests, on a short trace); on the local
    server so do the streams cancelled and doomed (within two).
    """
    path = sample_files()[1]
    head = "\n".join(path.read_text().split("\n")[:12]) + "\n"
    uri = f"file:///t/{path.name}"
    trace = synthesize({uri: head}, seed=2)
    written = tmp_path / "t.jsonl"
    write_trace(written, trace)
    latency = LatencyModel(ttft=ttft_ms / 1000.0, char_time=token_ms / 1000.0 / CHARS_PER_TOKEN)
    local = identify_as == "llamacpp"
    cost = LOCAL_SERVER if local else REMOTE_SERVICE
    simulated = run_design("ours", collect_timed(written), latency, cost=cost)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / path.name).write_text(trace.header.final[uri])
    async with ReferenceProcess(
        [corpus], ttft_ms=ttft_ms, token_ms=token_ms, extra_args=["--identify-as", identify_as]
    ) as service:
        endpoint = service.origin if local else service.url
        real = await replay_trace(
            trace,
            settings={
                "cache": {"l2": "none"},
                "endpoint": endpoint,
                "model": REFERENCE_MODEL,
                "transport": {"caFile": service.ca_file},
            },
            speed=1.0,
        )
    summary, stats = real.summary(), real.server_stats
    asked = stats["upstreamRequests"]
    print(  # for -rP
        f"{identify_as} {ttft_ms:.0f} ms: upstream requests simulated {simulated.started}, "
        f"real {asked}; cancelled {simulated.cancelled} / {summary['upstream']['cancelled']}; "
        f"doomed {simulated.doomed} / {stats['pacing']['doomed']}; instant "
        f"{simulated.share(simulated.instant):.3f} / {summary['instant']:.3f}"
    )
    figures = (simulated.to_json(), summary, stats["pacing"])
    assert asked > 0
    assert abs(simulated.started - asked) <= max(2, CHECK_TOLERANCE * asked), figures
    if local:
        assert stats["provider"]["detected"] == "llamacpp"
        assert abs(simulated.cancelled - summary["upstream"]["cancelled"]) <= 2, figures
        assert abs(simulated.doomed - stats["pacing"]["doomed"]) <= 2, figures

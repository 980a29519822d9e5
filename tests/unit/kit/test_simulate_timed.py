from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from lsp_server.kit.simulate import command as simulate_command
from lsp_server.kit.simulate.timed import (
    DESIGN_NAMES,
    LatencyModel,
    TimedTrace,
    collect_timed,
    run_design,
    simulate_timed,
)
from lsp_server.kit.synth.session import sample_files, synthesize
from lsp_server.observe.trace.format import (
    ChangeEvent,
    CompleteEvent,
    OpenEvent,
    Position,
    TextChange,
    Trace,
    TraceHeader,
)
from lsp_server.observe.trace.writer import write_trace
from transport.cost import LOCAL_SERVER, REMOTE_SERVICE

URI = "file:///w/m.py"
LATENCY = LatencyModel(ttft=0.3, char_time=0.005)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> TimedTrace:
    # the first 40 lines of one sample file keep the test fast
    path = sample_files()[0]
    text = "\n".join(path.read_text(encoding="utf-8").split("\n")[:40]) + "\n"
    trace = tmp_path_factory.mktemp("timed") / "s.jsonl"
    write_trace(trace, synthesize({path.as_uri(): text}, seed=3))
    return collect_timed(trace)


def _typed_twice(tmp_path: Path, pause: float) -> TimedTrace:
    """`x = compute(1)` typed, then retyped after an undo: the second request is a cache hit."""
    line = "value = compute(1)"
    final = line + "\n"
    events: list[object] = [OpenEvent(t=0.0, uri=URI, text="\n")]
    t = 0.0
    for round_ in range(2):
        for i, ch in enumerate("value = "):
            t += 0.1
            events.append(ChangeEvent(t=t, uri=URI, changes=(TextChange(ch, _at(i, i)),)))
        events.append(CompleteEvent(t=t + 0.004, uri=URI, position=Position(0, 8)))
        t += pause
        if round_ == 0:
            # accept by typing the rest, then delete the whole line again
            events.append(ChangeEvent(t=t, uri=URI, changes=(TextChange("compute(1)", _at(8, 8)),)))
            t += pause
            events.append(ChangeEvent(t=t, uri=URI, changes=(TextChange("", _at(0, len(line))),)))
    t += 0.1
    events.append(ChangeEvent(t=t, uri=URI, changes=(TextChange("compute(1)", _at(8, 8)),)))
    path = tmp_path / "twice.jsonl"
    write_trace(path, Trace(header=TraceHeader(final={URI: final}), events=events))  # type: ignore[arg-type]
    return collect_timed(path)


def _at(start: int, end: int) -> tuple[Position, Position]:
    return (Position(0, start), Position(0, end))


def test_same_trace_and_latency_give_the_same_figures(session: TimedTrace) -> None:
    first = [r.to_json() for r in simulate_timed(session, DESIGN_NAMES, [300.0])]
    again = [r.to_json() for r in simulate_timed(session, DESIGN_NAMES, [300.0])]
    assert first == again


def test_ours_never_serves_a_stale_suggestion(session: TimedTrace) -> None:
    for ttft in (0.1, 0.8):
        result = run_design("ours", session, LatencyModel(ttft=ttft, char_time=0.005))
        assert result.suggested > 0
        assert result.stale == 0


def test_a_hit_is_instant_for_ours_but_waits_for_tabbys_debounce(tmp_path: Path) -> None:
    trace = _typed_twice(tmp_path, pause=1.5)
    hit = trace.requests[1]
    ours = run_design("ours", trace, LATENCY)
    tabby = run_design("tabby", trace, LATENCY)
    assert ours.hits == 1 and ours.latencies[hit.index] == pytest.approx(LATENCY.hit)
    assert ours.instant == 1
    assert tabby.hits == 1 and tabby.latencies[hit.index] == pytest.approx(0.25 + LATENCY.hit)
    assert tabby.instant == 0


def test_tabby_cancels_on_every_keystroke_and_ours_attaches(session: TimedTrace) -> None:
    slow = LatencyModel(ttft=1.5, char_time=0.005)
    tabby = run_design("tabby", session, slow)
    ours = run_design("ours", session, slow)
    assert tabby.cancelled > 0
    assert tabby.started == tabby.completed + tabby.cancelled
    assert ours.started == ours.completed + ours.cancelled
    # streams the user types through are kept: fewer cancelled per started
    assert ours.cancelled / ours.started < tabby.cancelled / tabby.started
    assert ours.wasted_streams >= ours.cancelled


def test_speculative_prefetch_raises_the_instant_share_within_its_budget(
    session: TimedTrace,
) -> None:
    ours = run_design("ours", session, LATENCY)
    plain = run_design("ours-nospec", session, LATENCY)
    assert plain.speculative == 0
    assert 0 < ours.speculative
    minutes = session.requests[-1].t / 60.0
    assert ours.speculative <= 30 * (minutes + 1)
    assert ours.instant > plain.instant


def test_json_has_a_timed_object_per_design(
    session: TimedTrace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    text = "\n".join(sample_files()[1].read_text(encoding="utf-8").split("\n")[:15]) + "\n"
    write_trace(path, synthesize({URI: text}, seed=1))
    args = argparse.Namespace(
        trace=str(path),
        timed=True,
        ttft_ms=300.0,
        token_ms=20.0,
        designs="tabby,continue,cody,copilot,ours",
        json=True,
        plot=None,
    )
    assert simulate_command.run(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["timed"]) == {"tabby", "continue", "cody", "copilot", "ours"}
    for figures in data["timed"].values():
        assert set(figures) >= {
            "instant",
            "answeredBeforeNextKeystroke",
            "upstream",
            "wastedChars",
            "wastedStreams",
            "stale",
            "latencyMs",
        }
        assert set(figures["upstream"]) == {
            "started",
            "completed",
            "cancelled",
            "speculative",
            "doomed",
            "overlapping",
        }
        assert set(figures["latencyMs"]) == {"p50", "p95"}
        assert 0.0 <= figures["instant"] <= figures["answeredBeforeNextKeystroke"] <= 1.0


def test_unknown_design_is_a_usage_error_naming_the_known_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(path, synthesize({URI: "x = 1\n"}, seed=1))
    args = argparse.Namespace(
        trace=str(path), timed=True, ttft_ms=300.0, token_ms=20.0, designs="ours,magic", json=True
    )
    assert simulate_command.run(args) == 2
    err = capsys.readouterr().err
    assert "unknown design magic" in err
    assert "copilot" in err


def test_on_a_local_server_ours_keeps_one_stream_per_document_at_the_service(
    session: TimedTrace,
) -> None:
    # the server's turns: a miss or a prefetch waits for the document's stream to end
    slow = LatencyModel(ttft=1.5, char_time=0.01)
    local = run_design("ours", session, slow, cost=LOCAL_SERVER)
    assert local.started > 0 and local.speculative > 0 and local.overlapping == 0


def test_a_stream_left_before_its_first_token_is_doomed_on_a_local_server_only(
    session: TimedTrace,
) -> None:
    slow = LatencyModel(ttft=1.5, char_time=0.01)
    local = run_design("ours", session, slow, cost=LOCAL_SERVER)
    remote = run_design("ours", session, slow, cost=REMOTE_SERVICE)
    assert local.doomed > 0 and remote.doomed == 0
    assert local.started == local.completed + local.cancelled  # a doomed one ends cancelled
    assert remote.cancelled > 0


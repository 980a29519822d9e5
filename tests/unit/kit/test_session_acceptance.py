"""A recorded session's acceptance, counted from its trace in trace time."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from lsp_server.kit.acceptance import acceptance_rows, session_acceptance, trace_acceptance
from lsp_server.kit.simulate import command as simulate_command
from lsp_server.observe.trace.format import (
    AcceptEvent,
    ChangeEvent,
    CloseEvent,
    CompleteEvent,
    Event,
    OpenEvent,
    Position,
    ShownEvent,
    TextChange,
    Trace,
    TraceHeader,
)
from lsp_server.observe.trace.writer import write_trace
from tests.support import accept_sessions

URI = "file:///w/headers.py"
LINE = "    key, _, value = line.part"
GHOST = 'ition(":")'


def at(line: int, character: int) -> tuple[Position, Position]:
    return Position(line, character), Position(line, character)


def shown(t: float, item: str, line: int, character: int, text: str, source: str) -> ShownEvent:
    return ShownEvent(
        t=t,
        uri=URI,
        item=item,
        position=Position(line, character),
        text=text,
        source=source,
        language="python",
        scope="function_definition",
        latency_ms=2.0,
    )


def session(meta: dict[str, object]) -> Trace:
    """A full accept of one line, half of it deleted 1 s later; a word accept of another."""
    end = len(LINE)
    events: list[Event] = [
        OpenEvent(t=0.0, uri=URI, text=f"def parse(line):\n{LINE}\n    return"),
        CompleteEvent(t=0.5, uri=URI, position=Position(1, end)),
        shown(0.51, "s1", 1, end, GHOST, "upstream"),
        ChangeEvent(t=1.0, uri=URI, changes=(TextChange(GHOST, at(1, end)),)),
        AcceptEvent(t=1.01, uri=URI, item="s1"),
        # the second half of the accepted text, deleted before the short window
        ChangeEvent(
            t=2.0,
            uri=URI,
            changes=(TextChange("", (Position(1, end + 5), Position(1, end + 10))),),
        ),
        CompleteEvent(t=3.0, uri=URI, position=Position(2, 10)),
        shown(3.01, "s2", 2, 10, " key.strip(), value", "exact"),
        ChangeEvent(t=3.5, uri=URI, changes=(TextChange(" key", at(2, 10)),)),
        AcceptEvent(t=3.51, uri=URI, item="s2", kind="word", length=4),
        CompleteEvent(t=4.0, uri=URI, position=Position(2, 14)),
        shown(4.01, "s3", 2, 14, ".lower()", "typed"),  # never accepted
        CloseEvent(t=200.0, uri=URI),
    ]
    return Trace(header=TraceHeader(final={URI: ""}, meta=meta), events=events)


def test_the_counts_follow_the_recorded_accepts_and_edits() -> None:
    trace = session({})
    data = session_acceptance(trace.header, trace.events)
    assert (data["shown"], data["accepted"], data["acceptedChars"]) == (3, 2, 10 + 4)
    assert data["bySource"]["upstream"]["retainedChars30s"] == 5  # half of the line kept
    assert data["bySource"]["upstream"]["retainedChars120s"] == 5
    assert data["bySource"]["exact"]["retainedChars30s"] == 4
    assert data["bySource"]["typed"]["accepted"] == 0
    assert data["byKind"] == {"full": 1, "word": 1, "line": 0}
    assert data["byScope"]["function_definition"]["shown"] == 3
    assert data["windowsSeconds"] == [30.0, 120.0]
    assert data["pending"] == 0


def test_the_recorded_windows_and_session_length_decide_what_is_counted() -> None:
    trace = session({"acceptance": {"windowsSeconds": [0.5, 100.0]}, "seconds": 250.0})
    trace.events.pop()  # the close: the session ends with the server, at 250 s
    data = session_acceptance(trace.header, trace.events)
    # counted 0.5 s after the accept, before the deletion at 2.0 s: all ten kept then
    assert data["bySource"]["upstream"]["retainedChars30s"] == 10
    assert data["bySource"]["upstream"]["retainedChars120s"] == 5
    short = session({"acceptance": {"windowsSeconds": [0.5, 100.0]}, "seconds": 50.0})
    short.events.pop()
    data = session_acceptance(short.header, short.events)
    assert data["retainedChars120s"] == 0 and data["pending"] == 2  # the session ended first


def test_the_table_rows_give_rates(tmp_path: Path) -> None:
    trace = session({})
    rows = dict(acceptance_rows(session_acceptance(trace.header, trace.events)))
    assert rows["suggestions shown / accepted"] == "3 / 2 (67%)"
    assert rows["kept after 30 s (of those counted)"] == "9 of 14 (64%)"
    assert acceptance_rows({"shown": 0}) == []


def test_simulate_json_reports_the_recorded_acceptance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "session.jsonl"
    trace = session({})
    trace.header.final[URI] = f"def parse(line):\n{LINE}{GHOST[:5]}\n    return key"
    write_trace(path, trace)
    args = argparse.Namespace(
        trace=str(path),
        timed=False,
        strategies="scope",
        policies="lru",
        capacities="8",
        json=True,
        plot=None,
    )
    assert simulate_command.run(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["acceptance"] == trace_acceptance(path)
    assert data["acceptance"]["acceptedChars"] == 14


@pytest.mark.parametrize("name", sorted(accept_sessions.sessions()))
def test_hand_made_sessions_count_what_a_person_would(name: str) -> None:
    session = accept_sessions.sessions()[name]
    trace = accept_sessions.trace(session)
    data = session_acceptance(trace.header, trace.events)
    assert data["acceptedChars"] == session.accepted_chars
    assert (data["retainedChars30s"], data["retainedChars120s"]) == (
        session.kept_chars,
        session.kept_chars,
    )
    assert data["measuredChars120s"] == session.accepted_chars

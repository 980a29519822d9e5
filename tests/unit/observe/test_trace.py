from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsp_server.observe.trace.documents import TraceDocuments
from lsp_server.observe.trace.format import (
    AcceptEvent,
    ChangeEvent,
    CloseEvent,
    CompleteEvent,
    OpenEvent,
    Position,
    ShownEvent,
    TextChange,
    Trace,
    TraceError,
    TraceHeader,
    utf16_len,
    utf16_to_index,
)
from lsp_server.observe.trace.reader import iter_trace, read_header, read_trace
from lsp_server.observe.trace.writer import TraceWriter, write_trace

URI = "file:///work/demo.py"


def _sample_trace() -> Trace:
    return Trace(
        header=TraceHeader(final={URI: "x = 1\ny = 2 🎉\n"}, meta={"seed": 1}),
        events=[
            OpenEvent(t=0.0, uri=URI, text="x = 1\n"),
            ChangeEvent(
                t=0.1,
                uri=URI,
                changes=(TextChange("y = 2 🎉\n", (Position(1, 0), Position(1, 0))),),
            ),
            CompleteEvent(t=0.2, uri=URI, position=Position(1, 8), kind="inline", expect=""),
            CompleteEvent(t=0.3, uri=URI, position=Position(0, 1), kind="list"),
            CloseEvent(t=1.0, uri=URI),
        ],
    )


def _write_lines(path: Path, header: dict[str, object], events: list[object]) -> Path:
    lines = [json.dumps(header)] + [e if isinstance(e, str) else json.dumps(e) for e in events]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


HEADER = {"format": "scopecache-trace", "version": 1, "final": {URI: "a\n"}, "meta": {}}
OPEN = {"t": 0.0, "op": "open", "uri": URI, "languageId": "python", "text": "abc\n"}


def test_round_trip_preserves_every_event_and_the_header(tmp_path: Path) -> None:
    trace = _sample_trace()
    path = tmp_path / "t.jsonl"
    write_trace(path, trace)
    again = read_trace(path)
    assert again.header.final == trace.header.final
    assert again.header.meta == {"seed": 1}
    assert again.events == trace.events


def test_writer_emits_the_design_shapes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(path, _sample_trace())
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["format"] == "scopecache-trace" and lines[0]["version"] == 1
    assert lines[1] == {
        "t": 0.0,
        "op": "open",
        "uri": URI,
        "languageId": "python",
        "text": "x = 1\n",
    }
    assert lines[3]["position"] == {"line": 1, "character": 8}
    assert "expect" not in lines[4]
    assert "🎉" in path.read_text(encoding="utf-8")  # UTF-8, not \u escapes


def test_malformed_line_reports_file_and_line_number(tmp_path: Path) -> None:
    path = _write_lines(tmp_path / "trace.jsonl", HEADER, [OPEN, "{not json"])
    with pytest.raises(TraceError, match=r"^trace\.jsonl:3: "):
        read_trace(path)


def test_unknown_op_is_rejected(tmp_path: Path) -> None:
    path = _write_lines(tmp_path / "t.jsonl", HEADER, [OPEN, {"t": 1, "op": "save", "uri": URI}])
    with pytest.raises(TraceError, match=r"t\.jsonl:3: unknown op 'save'"):
        read_trace(path)


def test_position_past_the_line_end_is_rejected(tmp_path: Path) -> None:
    bad = {
        "t": 1,
        "op": "complete",
        "uri": URI,
        "position": {"line": 0, "character": 4},
        "kind": "inline",
    }
    path = _write_lines(tmp_path / "t.jsonl", HEADER, [OPEN, bad])
    with pytest.raises(TraceError, match=r"t\.jsonl:3: .*past the end"):
        read_trace(path)


def test_range_past_the_last_line_is_rejected(tmp_path: Path) -> None:
    rng = {"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": 0}}
    bad = {"t": 1, "op": "change", "uri": URI, "changes": [{"range": rng, "text": "x"}]}
    path = _write_lines(tmp_path / "t.jsonl", HEADER, [OPEN, bad])
    with pytest.raises(TraceError, match=r"t\.jsonl:3: line 5 is past the end"):
        read_trace(path)


def test_events_for_an_unopened_document_are_rejected(tmp_path: Path) -> None:
    path = _write_lines(tmp_path / "t.jsonl", HEADER, [{"t": 0, "op": "close", "uri": URI}])
    with pytest.raises(TraceError, match="is not open"):
        read_trace(path)


def test_header_must_name_the_format(tmp_path: Path) -> None:
    path = _write_lines(tmp_path / "t.jsonl", {"format": "other", "version": 1}, [])
    with pytest.raises(TraceError, match=r"t\.jsonl:1: not a scopecache-trace"):
        read_trace(path)


def test_read_header_reads_line_one_only(tmp_path: Path) -> None:
    path = _write_lines(tmp_path / "t.jsonl", HEADER, [OPEN, "{not json"])
    assert read_header(path).final == HEADER["final"]
    bad = _write_lines(tmp_path / "b.jsonl", {"format": "other", "version": 1}, [])
    with pytest.raises(TraceError, match=r"b\.jsonl:1: not a scopecache-trace"):
        read_header(bad)


def test_time_going_backwards_is_rejected(tmp_path: Path) -> None:
    later = dict(OPEN, t=5.0)
    close = {"t": 1.0, "op": "close", "uri": URI}
    path = _write_lines(tmp_path / "t.jsonl", HEADER, [later, close])
    with pytest.raises(TraceError, match="backwards"):
        read_trace(path)


def test_iterator_yields_documents_as_they_were_before_each_event(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_trace(path, _sample_trace())
    _header, events = iter_trace(path)
    texts = [docs.text(URI) if URI in docs else None for _event, docs in events]
    assert texts[0] is None
    assert texts[1] == "x = 1\n"
    assert texts[2] == "x = 1\ny = 2 🎉\n"


def test_utf16_columns_count_astral_characters_twice() -> None:
    line = "a🎉b"
    assert utf16_len(line) == 4
    assert utf16_to_index(line, 3) == 2
    with pytest.raises(ValueError, match="surrogate"):
        utf16_to_index(line, 2)


def test_documents_apply_utf16_ranges_across_lines() -> None:
    docs = TraceDocuments()
    docs.apply(OpenEvent(t=0, uri=URI, text="é🎉x\nsecond\nthird"))
    change = TextChange("Z", (Position(0, 3), Position(1, 3)))
    docs.apply(ChangeEvent(t=1, uri=URI, changes=(change,)))
    assert docs.text(URI) == "é🎉Zond\nthird"
    docs.apply(ChangeEvent(t=2, uri=URI, changes=(TextChange("whole"),)))
    assert docs.text(URI) == "whole"


def test_writer_accepts_an_open_stream(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        writer = TraceWriter(fh, TraceHeader(final={}))
        writer.write(OpenEvent(t=0, uri=URI, text=""))
        writer.close()
        assert not fh.closed
    assert read_trace(path).events == [OpenEvent(t=0, uri=URI, text="")]


def test_shown_and_accept_events_round_trip(tmp_path: Path) -> None:
    trace = Trace(
        header=TraceHeader(final={URI: "x = f(1)\n"}, meta={}),
        events=[
            OpenEvent(t=0.0, uri=URI, text="x = \n"),
            CompleteEvent(t=0.1, uri=URI, position=Position(0, 4)),
            ShownEvent(
                t=0.11,
                uri=URI,
                item="s1",
                position=Position(0, 4),
                text="f(1)",
                source="upstream",
                language="python",
                scope="module",
                latency_ms=3.25,
            ),
            ChangeEvent(t=0.2, uri=URI, changes=(TextChange("f(", (Position(0, 4),) * 2),)),
            AcceptEvent(t=0.21, uri=URI, item="s1", kind="word", length=2),
            AcceptEvent(t=0.3, uri=URI, item="s1"),
        ],
    )
    path = tmp_path / "t.jsonl"
    write_trace(path, trace)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[3]["op"] == "shown" and lines[3]["latencyMs"] == 3.25
    assert lines[5] == {
        "t": 0.21, "op": "accept", "uri": URI, "item": "s1", "kind": "word", "acceptedLength": 2
    }  # fmt: skip
    assert "acceptedLength" not in lines[6]
    assert read_trace(path).events == trace.events


def test_a_shown_position_outside_the_document_is_rejected(tmp_path: Path) -> None:
    shown = {
        "t": 1, "op": "shown", "uri": URI, "item": "s1", "position": {"line": 0, "character": 9},
        "text": "x", "source": "exact", "language": "python", "scope": "module",
    }  # fmt: skip
    path = _write_lines(tmp_path / "t.jsonl", HEADER, [OPEN, shown])
    with pytest.raises(TraceError, match=r"t\.jsonl:3: .*past the end"):
        read_trace(path)


def test_an_unknown_accept_kind_is_rejected(tmp_path: Path) -> None:
    accept = {"t": 1, "op": "accept", "uri": URI, "item": "s1", "kind": "char"}
    path = _write_lines(tmp_path / "t.jsonl", HEADER, [OPEN, accept])
    with pytest.raises(TraceError, match=r"t\.jsonl:3: unknown accept kind 'char'"):
        read_trace(path)

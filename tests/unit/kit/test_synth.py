from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from lsp_server.documents.languages import default_registry
from lsp_server.kit.synth import session as synth
from lsp_server.kit.synth.session import language_samples, sample_files, synthesize
from lsp_server.observe.trace.documents import TraceDocuments
from lsp_server.observe.trace.format import ChangeEvent, CompleteEvent, OpenEvent, utf16_len
from lsp_server.observe.trace.reader import read_trace

EMOJI = '''def greet(name: str) -> str:
    """Say hello 👋 to someone."""
    banner = "🎉🎉 " + name + " — ünïcode"
    return banner + " ✨"


def shout(text: str) -> str:
    loud = text.upper()
    return loud + "!"
'''


def _small() -> dict[str, str]:
    files = sample_files()[:2]
    return {p.as_uri(): p.read_text(encoding="utf-8") for p in files}


def test_samples_are_shipped_with_the_package() -> None:
    files = sample_files()
    assert len(files) >= 3
    assert sum(len(p.read_text().splitlines()) for p in files) >= 300


def test_same_seed_gives_the_same_session() -> None:
    assert synthesize(_small(), seed=4).events == synthesize(_small(), seed=4).events
    assert synthesize(_small(), seed=4).events != synthesize(_small(), seed=5).events


@pytest.mark.parametrize("nonlinear", [0.0, 0.6, 1.0])
def test_replaying_the_changes_reproduces_the_sample_files(nonlinear: float) -> None:
    texts = {p.as_uri(): p.read_text(encoding="utf-8") for p in sample_files()}
    trace = synthesize(texts, seed=11, nonlinear=nonlinear)  # self-checks, raises on mismatch
    docs = TraceDocuments()
    finals: dict[str, str] = {}
    for event in trace.events:
        if event.op == "close":
            finals[event.uri] = docs.text(event.uri)
        docs.apply(event)
    assert finals == texts


def test_non_ascii_text_round_trips_with_utf16_positions() -> None:
    uri = "file:///tmp/emoji.py"
    trace = synthesize({uri: EMOJI}, seed=2)
    docs = TraceDocuments()
    checked = 0
    for event in trace.events:
        if isinstance(event, CompleteEvent) and event.expect:
            line = docs.line(uri, event.position.line)
            typed = EMOJI.split("\n")[event.position.line][: len(line)]
            # the column is the UTF-16 length of what is on the line so far
            assert event.position.character == utf16_len(line)
            if "🎉" in typed:
                checked += 1
        docs.apply(event)
    assert checked > 0


def test_forward_typing_requests_expect_the_rest_of_the_line() -> None:
    uri = "file:///tmp/emoji.py"
    trace = synthesize({uri: EMOJI}, seed=3)
    docs = TraceDocuments()
    final_lines = EMOJI.split("\n")
    with_expect = 0
    for event in trace.events:
        if isinstance(event, CompleteEvent) and event.expect is not None:
            line = docs.line(uri, event.position.line)
            assert final_lines[event.position.line] == line + event.expect
            with_expect += 1
        docs.apply(event)
    requests = sum(isinstance(e, CompleteEvent) for e in trace.events)
    assert with_expect > requests // 2


def test_sessions_open_empty_files_and_accept_whole_lines() -> None:
    trace = synthesize(_small(), seed=1)
    opens = [e for e in trace.events if isinstance(e, OpenEvent)]
    assert {e.text for e in opens} == {""}
    inserts = [c.text for e in trace.events if isinstance(e, ChangeEvent) for c in e.changes]
    assert any(len(text) > 3 and "\n" not in text for text in inserts)  # accepted lines
    assert any(text.startswith("\n    ") for text in inserts)  # auto-indent on Enter
    kinds = {e.kind for e in trace.events if isinstance(e, CompleteEvent)}
    assert kinds == {"inline", "list"}


def test_nonlinear_sessions_rename_and_prefill() -> None:
    trace = synthesize(_small(), seed=7, nonlinear=1.0)
    renames = [e for e in trace.events if isinstance(e, ChangeEvent) and len(e.changes) > 1]
    assert renames
    assert trace.header.meta["nonlinear"] == 1.0


def test_cli_writes_a_readable_trace(tmp_path: Path) -> None:
    src = tmp_path / "mod.py"
    src.write_text(EMOJI, encoding="utf-8")
    out = tmp_path / "out.jsonl"
    args = argparse.Namespace(files=[str(src)], output=str(out), seed=9, nonlinear=0.3)
    assert synth.run(args) == 0
    trace = read_trace(out)
    assert trace.header.final == {src.resolve().as_uri(): EMOJI}
    meta = json.loads(out.read_text(encoding="utf-8").splitlines()[0])["meta"]
    assert meta["seed"] == 9 and meta["generatorVersion"] == synth.SYNTH_VERSION


OTHER_SAMPLES = [p for p in language_samples() if p.suffix != ".py"]


@pytest.mark.parametrize("path", OTHER_SAMPLES, ids=[p.name for p in OTHER_SAMPLES])
def test_any_language_is_synthesized_with_its_language_id_and_reproduced(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    trace = synthesize({path.as_uri(): text}, seed=3, nonlinear=0.5)  # self-checks
    spec = default_registry().for_uri(path.name)
    assert spec is not None
    opens = [e for e in trace.events if isinstance(e, OpenEvent)]
    assert [e.language_id for e in opens] == [spec.name]


def test_the_editor_auto_indent_of_a_tab_indented_file_inserts_tabs() -> None:
    (go,) = [p for p in OTHER_SAMPLES if p.suffix == ".go"]
    trace = synthesize({go.as_uri(): go.read_text(encoding="utf-8")}, seed=2)
    inserted = [c.text for e in trace.events if isinstance(e, ChangeEvent) for c in e.changes]
    assert any(t.startswith("\n\t") for t in inserted)
    assert not any(t.startswith("\n    ") for t in inserted)


def test_a_file_without_a_grammar_opens_as_plaintext() -> None:
    trace = synthesize({"file:///notes/todo.txt": "buy milk\n  and bread\n"}, seed=1)
    assert [e.language_id for e in trace.events if isinstance(e, OpenEvent)] == ["plaintext"]

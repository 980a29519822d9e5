"""The confidence kit judges recorded answers by their language's string rules, as the server."""

from __future__ import annotations

import json
from pathlib import Path

from lsp_server.kit.confidence import ScoredAnswer, answers_from_trace, score_bars

URI = "file:///p/lib.rs"
ANSWER = "parse<'a>(input: &str) -> Option<u8>"
WRITTEN = "parse<'a>(input: &str) -> Result<u8>"
#: the model unsure from ``Option`` on
DOUBTS = [[ANSWER.index("Option"), 0.2]]


def record(**extra: object) -> dict[str, object]:
    return {"answer": ANSWER, "doubts": DOUBTS, "expect": WRITTEN, "linePrefix": "pub fn ", **extra}


def saved(answer: ScoredAnswer) -> int:
    (score,) = score_bars([answer], [0.5])
    assert score.useful == 1
    return score.chars_saved


def test_a_record_with_its_language_is_cut_by_that_language_s_rules() -> None:
    rust = ScoredAnswer.from_json(record(language="rust"))
    # the lifetime is no open quote: all the sure text is shown and saved
    assert saved(rust) == len("parse<'a>(input: &str) -> ")
    # without a language, the default reading takes ' for an open string
    assert saved(ScoredAnswer.from_json(record())) == len("parse<")


def test_a_record_keeps_its_language_through_json() -> None:
    answer = ScoredAnswer.from_json(record(language="rust"))
    assert answer.language == "rust"
    assert ScoredAnswer.from_json(answer.to_json()).language == "rust"
    assert "language" not in ScoredAnswer.from_json(record()).to_json()


def test_answers_from_a_recorded_session_take_their_document_s_language(tmp_path: Path) -> None:
    trace = tmp_path / "session.jsonl"
    at = {"line": 0, "character": len("pub fn ")}
    events = [
        {"format": "scopecache-trace", "version": 1, "final": {URI: "pub fn " + WRITTEN}},
        {"t": 0.0, "op": "open", "uri": URI, "languageId": "rust", "text": "pub fn "},
        {"t": 0.2, "op": "change", "uri": URI,
         "changes": [{"range": {"start": at, "end": at}, "text": WRITTEN}]},
        {"t": 0.3, "op": "close", "uri": URI},
    ]  # fmt: skip
    trace.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    side = tmp_path / "session.jsonl.answers.jsonl"
    answer = {"t": 0.1, "uri": URI, "position": at, **record()}
    del answer["expect"]
    side.write_text(json.dumps(answer) + "\n", encoding="utf-8")
    (found,) = answers_from_trace(trace)
    assert found.language == "rust" and found.expect == WRITTEN
    assert saved(found) == len("parse<'a>(input: &str) -> ")

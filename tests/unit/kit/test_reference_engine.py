"""The reference service's corpus engine: longest match, lines, blocks, limits."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from lsp_server.kit.reference.corpus import engine_for, load_documents
from lsp_server.kit.reference.engine import CorpusEngine, count_tokens, opens_block, split_tokens

SOURCE = '''class Greeter:
    def __init__(self, name):
        self.name = name

    def greet(self):
        message = "hello " + self.name
        print(message)
        return message

    def shout(self):
        return self.greet().upper()


def add(a, b):
    return a + b
'''

OTHER = '''def greet_all(people):
    for person in people:
        print("hi " + person)
'''


def engine() -> CorpusEngine:
    return CorpusEngine([SOURCE, OTHER])


def test_continuation_runs_to_the_end_of_the_matched_line() -> None:
    result = engine().complete('x = 1\n        message = "hel')
    assert result.text == 'lo " + self.name'
    assert result.finish_reason == "stop"


def test_longest_tail_wins_over_a_shorter_earlier_match() -> None:
    # "greet(" occurs in both documents; the longer tail only in SOURCE.
    result = engine().complete("    def shout(self):\n        return self.greet")
    assert result.text == "().upper()"
    assert result.matched_chars > len("self.greet")


def test_block_opener_returns_the_indented_body_up_to_the_dedent() -> None:
    result = engine().complete("    def greet(self):\n        ")
    assert result.text == (
        'message = "hello " + self.name\n        print(message)\n        return message'
    )


def test_block_body_is_capped_at_four_lines() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(10))
    result = CorpusEngine(["def many():\n" + body]).complete("def many():\n    ")
    assert result.text.count("\n") == 3


def test_multiline_hint_forces_several_lines_without_a_block_opener() -> None:
    result = engine().complete("        self.name = na", multiline=True)
    assert result.text == "me"  # the next line is blank, then a dedent
    result = engine().complete('        message = "hello " + self.na', multiline=True)
    assert result.text == "me\n        print(message)\n        return message"


def test_a_brace_or_do_line_opens_a_block_too() -> None:
    assert opens_block("func f() {\n\t")
    assert opens_block("items.each do\n  ")
    assert not opens_block("x := f(\n")
    go = "func total(xs []int) int {\n\tsum := 0\n\tfor _, x := range xs {\n\t\tsum += x\n\t}\n}\n"
    assert CorpusEngine([go]).complete("func total(xs []int) int {\n\t").text == (
        "sum := 0\n\tfor _, x := range xs {\n\t\tsum += x\n\t}"
    )


def test_the_corpus_loader_indexes_any_text_file(tmp_path: Path) -> None:
    names = ("a.go", "b.ts", "c.rs", "notes.txt", "Makefile")
    for name in names:
        (tmp_path / name).write_text(f"content of {name}\n")
    assert sorted(load_documents([tmp_path])) == sorted(f"content of {n}\n" for n in names)


def test_opens_block_needs_a_colon_line_and_an_empty_cursor_line() -> None:
    assert opens_block("def f():\n    ")
    assert opens_block("if x:  \n")
    assert not opens_block("def f():\n    return")
    assert not opens_block("x = {'a':")


def test_stop_sequence_cuts_the_completion_before_it() -> None:
    result = engine().complete('        message = "hel', stop=["+"])
    assert result.text == 'lo " '


def test_max_tokens_truncates_and_reports_length() -> None:
    result = engine().complete('        message = "hel', max_tokens=2)
    assert result.text == 'lo "'
    assert result.finish_reason == "length"
    assert result.completion_tokens == 2


def test_no_match_gives_an_empty_completion() -> None:
    result = engine().complete("zqxjzqxj wvwvwv")
    assert result.text == ""
    assert result.matched_chars == 0


def test_empty_corpus_answers_empty() -> None:
    assert CorpusEngine().complete("def f():\n    ").text == ""


def test_answers_are_deterministic() -> None:
    prompts = ["    def ", "return ", "print(", "self.", "def add(a, b):\n    "]
    first = [engine().complete(p).text for p in prompts]
    second = [engine().complete(p).text for p in prompts]
    assert first == second


def test_match_never_crosses_a_document_boundary() -> None:
    # SOURCE ends with "a + b\n"; OTHER starts with "def greet_all". A prompt
    # spanning both must not match across the join.
    result = engine().complete("return a + b\ndef greet_all(pe")
    assert result.text == "ople):"
    end_of_doc = CorpusEngine(["x = 1"]).complete("x = ")
    assert end_of_doc.text == "1"


def test_tokens_concatenate_back_to_the_text() -> None:
    text = 'foo(bar, "x")  \n\tbaz  '
    assert "".join(split_tokens(text)) == text
    assert count_tokens(text) == len(split_tokens(text))
    assert split_tokens("a.b") == ["a", ".", "b"]


def test_corpus_loader_skips_binary_and_reads_traces(tmp_path: Path) -> None:
    (tmp_path / "code.py").write_text("def loaded():\n    return 42\n")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    (tmp_path / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    hidden = tmp_path / ".git"
    hidden.mkdir()
    (hidden / "config").write_text("ignored = true\n")
    header = json.dumps(
        {"format": "scopecache-trace", "version": 1, "final": {"file:///a.py": "TRACED = 1\n"}}
    )
    (tmp_path / "session.jsonl").write_text(header + "\n" + '{"t": 0, "op": "close"}\n')
    docs = load_documents([tmp_path])
    assert sorted(docs) == sorted(["def loaded():\n    return 42\n", "TRACED = 1\n"])
    assert engine_for([tmp_path]).complete("def loaded():\n    ").text == "return 42"


def test_the_corpus_stops_at_its_limit_and_says_which_flag_raises_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "a.py").write_text("A = 1\n" * 10)
    (tmp_path / "b.py").write_text("B = 2\n" * 10)
    with caplog.at_level(logging.WARNING, logger="lsp_server.kit.reference.corpus"):
        docs = load_documents([tmp_path], limit_bytes=70)
    assert len(docs) == 1
    assert "--corpus-limit-mb" in caplog.text
    assert len(load_documents([tmp_path], limit_bytes=1000)) == 2

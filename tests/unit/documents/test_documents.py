from __future__ import annotations

import pytest
from lsprotocol.types import (
    Position,
    PositionEncodingKind,
    Range,
    TextDocumentContentChangePartial,
    TextDocumentContentChangeWholeDocument,
)
from tree_sitter import Node, Parser

from lsp_server.documents.document import Document
from lsp_server.documents.languages import PYTHON, LanguageRegistry, LanguageSpec
from lsp_server.documents.store import DocumentStore, UnknownDocumentError

URI = "file:///work/example.py"

SOURCE = """import os


class Greeter:
    def greet(self, name):
        return "hello " + name


def main():
    g = Greeter()
    print(g.greet("world"))
"""


def edit(sl: int, sc: int, el: int, ec: int, text: str) -> TextDocumentContentChangePartial:
    return TextDocumentContentChangePartial(
        range=Range(start=Position(line=sl, character=sc), end=Position(line=el, character=ec)),
        text=text,
    )


def shape(node: Node) -> list[tuple[object, ...]]:
    """Every node with its type, byte span and points: what 'the same tree' means here."""
    out: list[tuple[object, ...]] = []
    stack = [node]
    while stack:
        n = stack.pop()
        out.append((n.type, n.start_byte, n.end_byte, tuple(n.start_point), tuple(n.end_point)))
        stack.extend(reversed(n.children))
    return out


def assert_tree_matches_fresh_parse(doc: Document) -> None:
    assert doc.tree is not None
    fresh = Parser(PYTHON.language).parse(doc.text.encode("utf-8", "surrogatepass"))
    assert str(doc.tree.root_node) == str(fresh.root_node)
    assert shape(doc.tree.root_node) == shape(fresh.root_node)


@pytest.fixture
def store() -> DocumentStore:
    return DocumentStore()


def test_open_parses_a_python_document(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, SOURCE)
    assert doc.tree is not None and doc.parse_skipped is None
    assert doc.tree.root_node.type == "module"
    assert URI in store and len(store) == 1 and store.get(URI) is doc


def test_typing_inside_a_function_edits_text_and_tree(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, SOURCE)
    old_tree = doc.tree
    store.change(URI, 2, [edit(5, 36, 5, 36, ".upper()")])
    assert doc.line_text(5) == '        return "hello " + name.upper()'
    assert doc.version == 2
    assert doc.tree is not old_tree, "the edited old tree is replaced by the re-parse"
    assert_tree_matches_fresh_parse(doc)


def test_inserting_lines_and_deleting_across_lines(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, SOURCE)
    store.change(URI, 2, [edit(6, 0, 6, 0, "    def part(self):\n        pass\n\n")])
    assert doc.line_text(6) == "    def part(self):"
    assert_tree_matches_fresh_parse(doc)
    store.change(URI, 3, [edit(3, 5, 11, 4, "")])
    assert doc.line_text(3) == "classmain():"
    assert_tree_matches_fresh_parse(doc)


def test_edit_at_end_of_file(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, SOURCE)
    last = doc.line_count - 1
    store.change(URI, 2, [edit(last, 0, last, 0, "main()\n")])
    assert doc.text == SOURCE + "main()\n"
    assert_tree_matches_fresh_parse(doc)


def test_range_past_the_end_clamps_to_the_end(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, "x = 1\n")
    store.change(URI, 2, [edit(0, 99, 40, 7, "0")])
    assert doc.text == "x = 10"
    assert_tree_matches_fresh_parse(doc)


def test_crlf_document_edits(store: DocumentStore) -> None:
    text = SOURCE.replace("\n", "\r\n")
    doc = store.open(URI, "python", 1, text)
    store.change(URI, 2, [edit(4, 8, 4, 13, "welcome")])
    store.change(URI, 3, [edit(9, 17, 10, 0, "\r\n    g.welcome('x')\r\n")])
    expected_lines = text.replace("greet", "welcome", 1).split("\r\n")
    assert doc.line_text(4) == expected_lines[4]
    assert doc.line_text(10) == "    g.welcome('x')"
    assert_tree_matches_fresh_parse(doc)


def test_mixed_line_endings_and_lone_cr(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, "a = 1\r\nb = 2\rc = 3\n")
    assert [doc.line_text(i) for i in range(doc.line_count)] == ["a = 1", "b = 2", "c = 3", ""]
    store.change(URI, 2, [edit(1, 5, 2, 0, "\n")])
    assert doc.text == "a = 1\r\nb = 2\nc = 3\n"
    assert_tree_matches_fresh_parse(doc)


def test_emoji_edit_in_utf16(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, 's = "😀😀"\n')
    # replace the second emoji: UTF-16 columns 7..9
    store.change(URI, 2, [edit(0, 7, 0, 9, "é")])
    assert doc.text == 's = "😀é"\n'
    assert_tree_matches_fresh_parse(doc)


@pytest.mark.parametrize(
    ("encoding", "start", "end"),
    [(PositionEncodingKind.Utf8, 9, 13), (PositionEncodingKind.Utf32, 6, 7)],
)
def test_emoji_edit_in_negotiated_encodings(
    encoding: PositionEncodingKind, start: int, end: int
) -> None:
    store = DocumentStore(position_encoding=encoding)
    doc = store.open(URI, "python", 1, 's = "😀😀"\n')
    store.change(URI, 2, [edit(0, start, 0, end, "x")])
    assert doc.text == 's = "😀x"\n'
    assert_tree_matches_fresh_parse(doc)


def test_position_encoding_can_be_switched_for_open_documents(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, "é = 1\n")
    store.position_encoding = PositionEncodingKind.Utf8
    assert doc.offset_at(Position(line=0, character=2)) == 2
    assert doc.position_at(2) == Position(line=0, character=2)
    store.position_encoding = PositionEncodingKind.Utf16
    assert doc.position_at(2) == Position(line=0, character=1)


def test_whole_document_change_replaces_and_reparses(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, SOURCE)
    store.change(URI, 2, [TextDocumentContentChangeWholeDocument(text="def f():\n    pass\n")])
    assert doc.text == "def f():\n    pass\n"
    assert_tree_matches_fresh_parse(doc)


def test_several_changes_in_one_notification_apply_in_order(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, "x = 1\n")
    store.change(
        URI,
        2,
        [
            edit(0, 4, 0, 5, "2"),
            TextDocumentContentChangeWholeDocument(text="y = 3\n"),
            edit(1, 0, 1, 0, "z = y\n"),
        ],
    )
    assert doc.text == "y = 3\nz = y\n"
    assert_tree_matches_fresh_parse(doc)


def test_nul_content_keeps_text_without_a_tree_and_recovers(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, "x = 1\0\n")
    assert doc.tree is None and doc.parse_skipped == "binary"
    assert doc.line_text(0) == "x = 1\0"
    store.change(URI, 2, [edit(0, 5, 0, 6, "")])
    assert doc.parse_skipped is None
    assert_tree_matches_fresh_parse(doc)


def test_oversize_document_is_kept_as_text_only() -> None:
    store = DocumentStore(max_parse_bytes=1000)
    doc = store.open(URI, "python", 1, "x = 1\n" * 500)
    assert doc.tree is None and doc.parse_skipped == "too large"
    store.change(URI, 2, [edit(499, 0, 499, 5, "y = 2")])
    assert doc.line_text(499) == "y = 2"
    store.max_parse_bytes = 10_000
    assert_tree_matches_fresh_parse(doc)


def test_unknown_language_is_text_only(store: DocumentStore) -> None:
    doc = store.open("file:///notes.txt", "plaintext", 1, "hello\n")
    assert doc.tree is None and doc.parse_skipped == "no grammar"
    assert doc.language == "plaintext"
    store.change("file:///notes.txt", 2, [edit(0, 5, 0, 5, " world")])
    assert doc.text == "hello world\n"


def test_language_falls_back_to_the_file_extension(store: DocumentStore) -> None:
    doc = store.open("file:///work/mod.py", "", 1, "x = 1\n")
    assert doc.language == "python" and doc.tree is not None


def test_change_for_a_document_not_open_raises_our_error(store: DocumentStore) -> None:
    with pytest.raises(UnknownDocumentError):
        store.change("file:///nope.py", 1, [edit(0, 0, 0, 0, "x")])


def test_close_forgets_the_document_and_tolerates_unknown(store: DocumentStore) -> None:
    store.open(URI, "python", 1, SOURCE)
    store.close(URI)
    store.close(URI)
    assert URI not in store and store.get(URI) is None and len(store) == 0


def test_out_of_order_version_is_still_applied(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 5, "x = 1\n")
    store.change(URI, 3, [edit(0, 4, 0, 5, "2")])
    assert doc.text == "x = 2\n" and doc.version == 3


def test_text_helpers_use_byte_offsets(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, "é = 'x'\nb = 2\n")
    offset = doc.offset_at(Position(line=1, character=0))
    assert offset == len("é = 'x'\n".encode())
    assert doc.text_range(0, 2) == "é"
    assert doc.line_text(99) == ""
    assert doc.line_count == 3


def test_a_new_grammar_is_one_registration() -> None:
    registry = LanguageRegistry()
    registry.register(
        LanguageSpec(
            name="snake",
            grammar_module=PYTHON.grammar_module,
            scope_types=PYTHON.scope_types,
            extensions=("snk",),
        )
    )
    store = DocumentStore(languages=registry)
    doc = store.open("file:///a.snk", "whatever", 1, "def f():\n    pass\n")
    assert doc.language == "snake" and doc.tree is not None
    assert store.open(URI, "python", 1, "x").tree is None, "python is not in this registry"


def test_removing_the_only_nul_byte_makes_the_document_parseable_again() -> None:
    from lsprotocol.types import Position, Range, TextDocumentContentChangePartial

    store = DocumentStore()
    doc = store.open("file:///b.py", "python", 1, "x = 1\n")
    assert doc.tree is not None
    at = Position(line=0, character=0)
    store.change(
        "file:///b.py",
        2,
        [TextDocumentContentChangePartial(range=Range(start=at, end=at), text="\0")],
    )
    assert doc.tree is None and doc.parse_skipped == "binary"
    end = Position(line=0, character=1)
    store.change(
        "file:///b.py",
        3,
        [TextDocumentContentChangePartial(range=Range(start=at, end=end), text="")],
    )
    assert doc.tree is not None and doc.text == "x = 1\n"

from __future__ import annotations

import itertools
import tracemalloc

import pytest
from lsprotocol.types import (
    Position,
    PositionEncodingKind,
    Range,
    TextDocumentContentChangePartial,
    TextDocumentContentChangeWholeDocument,
)
from tree_sitter import Node, Parser

from lsp_server.documents.document import PARSE_RETRY_EDITS, Document, bounded_parse
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


# tree-sitter-typescript 0.23.2's TSX grammar never finishes on this text (an
# upstream bug, tree-sitter-typescript#323): the server must not freeze on it.
# The timeout markers guard the test run; nothing here measures time.
TSX_LOOP = 'n";/"{({x:d:c f() '
TSX_URI = "file:///work/widget.tsx"


def type_text(store: DocumentStore, uri: str, text: str) -> None:
    """Type ``text`` at the end of the document's first line, one keystroke per change."""
    doc = store.get(uri)
    assert doc is not None
    col = len(doc.line_text(0))
    for i, ch in enumerate(text):
        store.change(uri, doc.version + 1, [edit(0, col + i, 0, col + i, ch)])


def test_a_parse_past_its_deadline_returns_none_instead_of_a_tree() -> None:
    long_text = (SOURCE * 200).encode()  # long enough for the clock to be read twice
    ticks = itertools.count()
    parser = Parser(PYTHON.language)
    assert bounded_parse(parser, long_text, deadline_seconds=0.5, clock=lambda: 0.0)
    assert bounded_parse(parser, long_text, deadline_seconds=0.5,
                         clock=lambda: float(next(ticks))) is None
    assert next(ticks) >= 2
    # the parser is usable afterwards
    assert not parser.parse(long_text).root_node.has_error


def test_an_error_in_the_deadline_check_stops_the_parse_and_leaves_the_parser_usable() -> None:
    long_text = (SOURCE * 200).encode()
    calls = itertools.count()

    def failing_clock() -> float:
        if next(calls) >= 1:
            raise RuntimeError("clock failed")
        return 0.0

    parser = Parser(PYTHON.language)
    with pytest.raises(RuntimeError, match="clock failed"):
        bounded_parse(parser, long_text, clock=failing_clock)
    tree = bounded_parse(parser, SOURCE.encode())
    assert tree is not None and not tree.root_node.has_error
    assert tree.root_node.end_byte == len(SOURCE.encode())


@pytest.mark.timeout(60)
# the second text is the reproduction in tree-sitter-typescript#323
@pytest.mark.parametrize("text", [TSX_LOOP, "<a {{b:>c:d(e f)\n"])
def test_opening_text_the_grammar_loops_on_serves_it_text_only(text: str) -> None:
    doc = DocumentStore().open(TSX_URI, "typescriptreact", 1, text)
    assert doc.tree is None and doc.parse_skipped == "parse timed out"
    assert doc.text == text
    assert doc.line_text(0) == text.rstrip("\n")


@pytest.mark.timeout(60)
def test_typing_text_the_grammar_loops_on_keeps_the_document_served(
    store: DocumentStore,
) -> None:
    store.open(TSX_URI, "typescriptreact", 1, "")
    type_text(store, TSX_URI, TSX_LOOP)
    doc = store.get(TSX_URI)
    assert doc is not None and doc.text == TSX_LOOP
    assert doc.tree is None and doc.parse_skipped == "parse timed out"
    assert doc.offset_at(Position(line=0, character=len(TSX_LOOP))) == len(TSX_LOOP)


@pytest.mark.timeout(60)
def test_after_the_back_off_a_fixed_text_is_parsed_again(store: DocumentStore) -> None:
    store.open(TSX_URI, "typescriptreact", 1, TSX_LOOP)
    # the text stays current while the document is served text-only, and after
    # the back-off it is parsed afresh
    for version in range(2, PARSE_RETRY_EDITS + 3):
        store.change(TSX_URI, version, [
            TextDocumentContentChangeWholeDocument(text=f"const n = {version};\n")
        ])
    doc = store.get(TSX_URI)
    assert doc is not None and doc.text == f"const n = {PARSE_RETRY_EDITS + 2};\n"
    assert doc.tree is not None and not doc.tree.root_node.has_error
    assert doc.parse_skipped is None


@pytest.mark.timeout(60)
def test_a_text_that_still_loops_after_the_back_off_waits_twice_as_long(
    store: DocumentStore,
) -> None:
    doc = store.open(TSX_URI, "typescriptreact", 1, TSX_LOOP)
    # the loop survives text typed after it: the retry after the back-off times out again
    type_text(store, TSX_URI, "x" * (PARSE_RETRY_EDITS + 1))
    assert doc.parse_skipped == "parse timed out"
    # now 2 * PARSE_RETRY_EDITS edits pass without a parse, even once the text is fine
    store.change(TSX_URI, doc.version + 1, [
        TextDocumentContentChangeWholeDocument(text="const n = 1;\n")
    ])
    type_text(store, TSX_URI, " " * (2 * PARSE_RETRY_EDITS - 1))
    assert doc.tree is None and doc.parse_skipped == "parse timed out"
    type_text(store, TSX_URI, " ")
    assert doc.tree is not None and doc.parse_skipped is None


def test_a_deadline_parse_keeps_no_copy_of_the_text_it_read() -> None:
    # py-tree-sitter keeps a reference to every object a read callback
    # returns: a fresh slice per read would keep the text alive per parse
    data = bytearray(SOURCE.encode() * 100)
    parser = Parser(PYTHON.language)
    tree = parser.parse(data)
    at = data.index(b"hello ")

    def keystrokes(n: int) -> None:
        nonlocal tree
        for i in range(n):
            data[at] = ord("hH"[i % 2])
            tree.edit(at, at + 1, at + 1, (5, 16), (5, 17), (5, 17))
            new = bounded_parse(parser, data, tree)
            assert new is not None
            tree = new

    tracemalloc.start()
    try:
        keystrokes(200)  # the interpreter's and the binding's first allocations
        before = tracemalloc.get_traced_memory()[0]
        keystrokes(1000)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < len(data), f"{grown} bytes kept after 1000 parses of {len(data)} bytes"


def test_node_text_of_a_deadline_parse_reads_the_current_text() -> None:
    data = bytearray(SOURCE.encode())
    tree = bounded_parse(Parser(PYTHON.language), data)
    assert tree is not None
    assert tree.root_node.text == SOURCE.encode()
    greeter = tree.root_node.children[1]
    assert greeter.text is not None and greeter.text.startswith(b"class Greeter:")
    # a node of a longer, older text ends (padded) instead of reading forever
    del data[greeter.start_byte + 5 :]
    text = greeter.text
    assert text is not None and text.startswith(b"class")
    assert len(text) == greeter.end_byte - greeter.start_byte

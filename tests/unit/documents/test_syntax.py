from __future__ import annotations

import pytest
from lsprotocol.types import Position, Range, TextDocumentContentChangePartial

from cache.keys import LineAnchor, ScopeKey
from lsp_server.documents.document import Document
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import SyntaxContext, syntax_context
from lsp_server.documents.windows import DEFAULT_WINDOWS

URI = "file:///work/shop.py"

SOURCE = '''import math


class Cart:
    """A shopping cart."""

    def __init__(self):
        self.items = []

    def total(self, tax):
        subtotal = sum(p for p in self.items)
        return subtotal * (1 + tax)


def area(r):
    return math.pi * r * r


def volume(r):
    return math.pi * r * r
'''


def at(text: str, marker: str, *, nth: int = 0, after: bool = True) -> Position:
    """The position right after (or before) the nth occurrence of ``marker``."""
    index = -1
    for _ in range(nth + 1):
        index = text.index(marker, index + 1)
    if after:
        index += len(marker)
    line = text.count("\n", 0, index)
    column = index - (text.rfind("\n", 0, index) + 1)
    return Position(line=line, character=column)


def insert(store: DocumentStore, doc: Document, pos: Position, text: str) -> None:
    store.change(
        doc.uri,
        doc.version + 1,
        [TextDocumentContentChangePartial(range=Range(start=pos, end=pos), text=text)],
    )


def key(ctx: SyntaxContext) -> ScopeKey:
    return ScopeKey.build(
        language=ctx.language,
        scope_depth=ctx.scope_depth,
        node_type=ctx.node_type,
        parent_type=ctx.parent_type,
        scope_text=ctx.scope_prefix,
        suffix_text=ctx.suffix,
    )


@pytest.fixture
def store() -> DocumentStore:
    return DocumentStore()


@pytest.fixture
def doc(store: DocumentStore) -> Document:
    return store.open(URI, "python", 1, SOURCE)


def test_scope_chain_of_a_method_lists_module_class_function(doc: Document) -> None:
    ctx = syntax_context(doc, at(SOURCE, "subtotal * "))
    assert ctx.parsed
    assert ctx.scope_chain == ("module", "class_definition", "function_definition")
    assert ctx.scope_depth == 2
    assert ctx.language == "python"
    start = SOURCE.index("def total")
    assert ctx.scope_start_byte == start
    assert ctx.scope_end_byte == SOURCE.index("tax)\n", start) + len("tax)")


def test_node_is_the_named_node_before_the_cursor_and_parent_its_ancestor(doc: Document) -> None:
    ctx = syntax_context(doc, at(SOURCE, "return subtotal"))
    assert (ctx.node_type, ctx.parent_type) == ("identifier", "binary_operator")


def test_line_prefix_and_suffix(doc: Document) -> None:
    ctx = syntax_context(doc, at(SOURCE, "return subtotal"))
    assert ctx.line_prefix == "        return subtotal"
    assert ctx.line_suffix == " * (1 + tax)"
    assert not ctx.at_line_start


def test_suffix_stops_at_the_end_of_the_enclosing_scope(doc: Document) -> None:
    ctx = syntax_context(doc, at(SOURCE, "def area(r):\n    return math.pi"))
    assert ctx.suffix == " * r * r"
    assert "volume" not in ctx.suffix


def test_module_level_suffix_is_bounded_by_lines_and_chars(doc: Document) -> None:
    windows = DEFAULT_WINDOWS._replace(suffix_lines=2, suffix_chars=1000)
    ctx = syntax_context(doc, Position(line=0, character=0), windows)
    assert ctx.suffix == "import math\n\n"
    ctx = syntax_context(
        doc, Position(line=0, character=0), DEFAULT_WINDOWS._replace(suffix_chars=5)
    )
    assert ctx.suffix == "impor"


def test_windows_are_bounded(store: DocumentStore) -> None:
    body = "".join(f"    v{i} = {i} * 2 + 1\n" for i in range(3000))
    text = "def big():\n" + body + "    return v0\n"
    doc = store.open("file:///big.py", "python", 1, text)
    ctx = syntax_context(
        doc,
        Position(line=1500, character=10),
        DEFAULT_WINDOWS._replace(
            prefix_chars=300, prefix_lines=5, suffix_chars=50, suffix_lines=30, scope_chars=120
        ),
    )
    assert ctx.prefix.count("\n") <= 5 and len(ctx.prefix) <= 300
    assert len(ctx.suffix) == 50
    assert len(ctx.scope_prefix) == 120
    assert ctx.scope_prefix.endswith("\n    v1499 ")
    ctx = syntax_context(
        doc, Position(line=1500, character=10), DEFAULT_WINDOWS._replace(prefix_chars=40)
    )
    assert len(ctx.prefix) == 40


def test_edit_outside_the_scope_keeps_key_windows_and_structure(
    store: DocumentStore, doc: Document
) -> None:
    cursor = at(SOURCE, "def area(r):\n    return math.pi")
    before = syntax_context(doc, cursor)
    # a line added above (in the class) and one below (in another function)
    insert(store, doc, at(SOURCE, "self.items = []"), "\n        self.count = 0")
    insert(store, doc, Position(line=doc.line_count - 1, character=0), "print(volume(2))\n")
    cursor = Position(line=cursor.line + 1, character=cursor.character)
    after = syntax_context(doc, cursor)
    assert after.scope_prefix == before.scope_prefix
    assert after.suffix == before.suffix
    assert (after.scope_depth, after.node_type, after.parent_type) == (
        before.scope_depth,
        before.node_type,
        before.parent_type,
    )
    assert key(after) == key(before)


def test_edit_inside_the_scope_changes_the_key(store: DocumentStore, doc: Document) -> None:
    cursor = at(SOURCE, "def area(r):\n    return math.pi")
    before = syntax_context(doc, cursor)
    insert(store, doc, at(SOURCE, "def area(r):"), "\n    r = abs(r)")
    after = syntax_context(doc, Position(line=cursor.line + 1, character=cursor.character))
    assert after.scope_prefix != before.scope_prefix
    assert key(after) != key(before)


def test_edit_in_the_suffix_changes_the_key(store: DocumentStore, doc: Document) -> None:
    cursor = at(SOURCE, "def area(r):\n    return math.pi")
    before = syntax_context(doc, cursor)
    insert(store, doc, at(SOURCE, "math.pi * r * r", nth=0), " / 2")
    after = syntax_context(doc, cursor)
    assert after.suffix == " * r * r / 2" and key(after) != key(before)


def test_two_functions_with_the_same_shape_have_different_keys(doc: Document) -> None:
    area = syntax_context(doc, at(SOURCE, "def area(r):\n    return math.pi"))
    volume = syntax_context(doc, at(SOURCE, "def volume(r):\n    return math.pi"))
    assert (area.scope_depth, area.node_type, area.parent_type) == (
        volume.scope_depth,
        volume.node_type,
        volume.parent_type,
    )
    assert area.scope_prefix != volume.scope_prefix
    assert key(area) != key(volume)


def test_line_anchor_ignores_typing_on_the_current_line(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, "def f(x):\n    y = x\n    return \n")
    before = syntax_context(doc, Position(line=2, character=11))
    insert(store, doc, Position(line=2, character=11), "y")
    after = syntax_context(doc, Position(line=2, character=12))

    def anchor(ctx: SyntaxContext) -> LineAnchor:
        return LineAnchor.build(
            language=ctx.language, context=ctx.line_context, suffix_text=ctx.suffix
        )

    assert anchor(after) == anchor(before)
    assert after.line_prefix == "    return y"


def test_line_context_survives_error_recovery_while_a_method_header_is_typed(
    store: DocumentStore,
) -> None:
    # "    def __str__(s" inside a class parses as one module-wide ERROR: the
    # class is gone from the tree until the header is complete
    text = 'import re\n\n\nclass Token:\n    """A token."""\n\n    kind: str\n\n'
    doc = store.open(URI, "python", 1, text + "\n")
    line = text.count("\n")
    fresh = syntax_context(doc, Position(line=line, character=0))
    assert fresh.line_context.startswith("class Token:")
    typed = ""
    for ch in "    def __str__(self) -> str:":
        insert(store, doc, Position(line=line, character=len(typed)), ch)
        typed += ch
        ctx = syntax_context(doc, Position(line=line, character=len(typed)))
        assert ctx.line_prefix == typed
        assert ctx.line_context == fresh.line_context, typed


def test_line_context_holds_while_typing_inside_an_unfinished_parameter_list(
    store: DocumentStore,
) -> None:
    # even the fresh line is in error (the "(" is open); typing on it
    # changes how the recovery cuts the class, which must not show
    text = 'import re\n\n\nclass Fetcher:\n    """Fetch."""\n\n    def __init__(\n'
    doc = store.open(URI, "python", 1, text + "        \n")
    line = text.count("\n")
    fresh = syntax_context(doc, Position(line=line, character=8))
    typed = "        "
    for ch in "self,":
        insert(store, doc, Position(line=line, character=len(typed)), ch)
        typed += ch
        ctx = syntax_context(doc, Position(line=line, character=len(typed)))
        assert ctx.line_context == fresh.line_context, typed


def test_line_context_follows_an_edit_above_the_line_despite_error_recovery(
    store: DocumentStore,
) -> None:
    doc = store.open(URI, "python", 1, "class Token:\n    kind: str\n    def f(s\n")
    before = syntax_context(doc, Position(line=2, character=11))
    insert(store, doc, Position(line=1, character=13), "r")
    after = syntax_context(doc, Position(line=2, character=11))
    assert before.line_context != after.line_context
    assert after.line_context.endswith("kind: strr\n")


def test_fresh_indented_line_stays_in_the_function(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, "def f():\n    x = 1\n    \n")
    ctx = syntax_context(doc, Position(line=2, character=4))
    assert ctx.scope_chain == ("module", "function_definition")
    assert ctx.at_line_start and not ctx.block_opener


def test_fresh_line_at_column_zero_after_a_function_is_module_level(
    store: DocumentStore,
) -> None:
    doc = store.open(URI, "python", 1, "def f():\n    x = 1\n\n")
    ctx = syntax_context(doc, Position(line=2, character=0))
    assert ctx.scope_chain == ("module",) and ctx.scope_depth == 0
    assert (ctx.node_type, ctx.parent_type) == ("function_definition", "module")
    assert ctx.scope_prefix.startswith("def f():")


@pytest.mark.parametrize(
    "text",
    [
        "def f(x):\n    ",
        "class A:\n    def g(self):\n        if self:\n            ",
        "for i in range(3):  # count\n    ",
        "try:\n    pass\nexcept ValueError:\n    ",
    ],
)
def test_block_opener_after_a_colon_line(store: DocumentStore, text: str) -> None:
    doc = store.open(URI, "python", 1, text)
    last = text.count("\n")
    ctx = syntax_context(doc, Position(line=last, character=len(text.split("\n")[-1])))
    assert ctx.block_opener and ctx.at_line_start


def test_block_opener_at_the_end_of_the_header_line(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, "def f(x):\n")
    assert syntax_context(doc, Position(line=0, character=9)).block_opener


@pytest.mark.parametrize(
    "text",
    ["d = {'a':\n    ", "s = 'a:'\n", "x = y[1:\n    ", "# todo:\n", "x = 1\n    "],
)
def test_colon_that_does_not_open_a_block(store: DocumentStore, text: str) -> None:
    doc = store.open(URI, "python", 1, text)
    last = text.count("\n")
    ctx = syntax_context(doc, Position(line=last, character=len(text.split("\n")[-1])))
    assert not ctx.block_opener


def test_incomplete_code_gives_a_context_with_a_non_error_parent(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, "def f():\n    x = foo(a, ")
    ctx = syntax_context(doc, Position(line=1, character=15))
    assert ctx.parsed and ctx.parent_type != "ERROR"
    assert ctx.line_prefix == "    x = foo(a, "


def test_position_past_the_end_is_clamped(doc: Document) -> None:
    ctx = syntax_context(doc, Position(line=500, character=3))
    assert ctx.clamped and ctx.offset == len(SOURCE.encode())
    assert ctx.line == SOURCE.count("\n") and ctx.character == 0
    ctx = syntax_context(doc, Position(line=0, character=99))
    assert ctx.clamped and ctx.character == len("import math")


def test_emoji_line_prefix_in_utf16(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, "s = '😀' + t\n")
    ctx = syntax_context(doc, Position(line=0, character=8))
    assert ctx.line_prefix == "s = '😀'" and ctx.line_suffix == " + t"


def test_without_a_tree_the_context_is_text_only(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, "x = 1\0\ndef f():\n    ")
    ctx = syntax_context(
        doc, Position(line=2, character=4), DEFAULT_WINDOWS._replace(prefix_chars=100)
    )
    assert not ctx.parsed
    assert (ctx.scope_depth, ctx.node_type, ctx.parent_type) == (0, "text", "text")
    assert ctx.scope_chain == ()
    assert ctx.scope_prefix == ctx.prefix == "x = 1\0\ndef f():\n    "
    assert ctx.block_opener


def test_unknown_language_context_uses_its_language_id(store: DocumentStore) -> None:
    doc = store.open("file:///notes.md", "markdown", 1, "# Title\n\nSome text")
    ctx = syntax_context(doc, Position(line=2, character=4))
    assert ctx.language == "markdown" and not ctx.parsed
    assert ctx.line_prefix == "Some"


def test_empty_document(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, "")
    ctx = syntax_context(doc, Position(line=0, character=0))
    assert ctx.scope_chain == ("module",)
    assert (ctx.node_type, ctx.parent_type) == ("module", "none")
    assert ctx.prefix == ctx.suffix == ctx.scope_prefix == ""
    assert ctx.at_line_start and not ctx.block_opener

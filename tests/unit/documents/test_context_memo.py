"""The last syntax context is answered again at the same cursor, and never after a change."""

from __future__ import annotations

from lsprotocol.types import (
    Position,
    Range,
    TextDocumentContentChangePartial,
    TextDocumentContentChangeWholeDocument,
)

from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import SyntaxContext, completion_context, syntax_context
from lsp_server.documents.windows import ContextWindows
from lsp_server.settings import CompletionSettings

SOURCE = "def greet(name):\n    message = \n"
AT = Position(line=1, character=14)
SETTINGS = CompletionSettings()


def same(a: SyntaxContext, b: SyntaxContext) -> bool:
    """Equal but for the prompt windows (read lazily, each reading its own)."""
    return a._replace(prompt=None) == b._replace(prompt=None)


def test_the_same_cursor_on_the_same_text_gets_the_context_taken_before() -> None:
    doc = DocumentStore().open("file:///m.py", "python", 1, SOURCE)
    first = completion_context(doc, AT, SETTINGS)
    assert completion_context(doc, Position(line=1, character=14), SETTINGS) is first
    assert same(first, syntax_context(doc, AT, ContextWindows.of(SETTINGS)))


def test_another_cursor_or_other_windows_get_their_own_context() -> None:
    doc = DocumentStore().open("file:///m.py", "python", 1, SOURCE)
    first = completion_context(doc, AT, SETTINGS)
    elsewhere = completion_context(doc, Position(line=1, character=4), SETTINGS)
    assert elsewhere.character == 4 and elsewhere is not first
    narrow = CompletionSettings(scope_chars=8)
    assert completion_context(doc, AT, narrow).scope_prefix == first.scope_prefix[-8:]


def test_an_edit_drops_it_even_one_that_keeps_the_length() -> None:
    doc = DocumentStore().open("file:///m.py", "python", 1, SOURCE)
    first = completion_context(doc, AT, SETTINGS)
    start, end = Position(line=0, character=4), Position(line=0, character=9)
    doc.apply_changes([TextDocumentContentChangePartial(range=Range(start, end), text="hello")])
    again = completion_context(doc, AT, SETTINGS)
    assert again is not first and "hello" in again.scope_heads + again.line_context
    doc.apply_changes([TextDocumentContentChangeWholeDocument(text=SOURCE.replace("name", "who"))])
    whole = completion_context(doc, AT, SETTINGS)
    assert whole is not again and "who" in whole.scope_heads + whole.line_context
    doc.replace_text(SOURCE)
    assert same(completion_context(doc, AT, SETTINGS), first)


def test_a_new_tree_without_an_edit_drops_it() -> None:
    doc = DocumentStore().open("file:///m.py", "python", 1, SOURCE)
    first = completion_context(doc, AT, SETTINGS)
    doc.max_parse_bytes = 4  # the limit fell: the text is served without a tree
    doc.reconsider_parse()
    assert doc.tree is None
    plain = completion_context(doc, AT, SETTINGS)
    assert plain is not first and not plain.parsed

"""What a document's line memo keeps and drops as edits arrive."""

from __future__ import annotations

from lsprotocol.types import Position, Range, TextDocumentContentChangePartial

from lsp_server.documents.document import Document
from lsp_server.documents.line_memo import LineMemo, LineScope, LineText, SuffixEnd
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import syntax_context

SOURCE = (
    "function total(items) {\n"
    "  let sum = 0;\n"
    "  for (const item of items) {\n"
    "    sum += item.price;\n"
    "  }\n"
    "  return sum;\n"
    "}\n"
)


def memo_on_line(line_start: int, line_end: int) -> LineMemo:
    memo = LineMemo()
    memo.line_scope = LineScope(line_start, 2000, LineText("before", ""), True)
    memo.suffix_end = SuffixEnd(line_start, line_end, b"", 10)
    return memo


def test_typing_on_the_line_keeps_both_readings_and_moves_the_line_end() -> None:
    memo = memo_on_line(100, 120)
    memo.note_edit(120, 120, 121, line_break=False)  # a character typed at the end
    memo.note_edit(110, 112, 110, line_break=False)  # two deleted in the middle
    assert memo.line_scope is not None
    assert memo.suffix_end is not None and memo.suffix_end.line_end == 119


def test_an_edit_before_the_line_drops_both_readings() -> None:
    memo = memo_on_line(100, 120)
    memo.note_edit(40, 41, 41, line_break=False)  # the same length: still dropped
    assert memo.line_scope is None and memo.suffix_end is None


def test_an_edit_after_the_line_keeps_the_scope_but_drops_the_suffix_end() -> None:
    memo = memo_on_line(100, 120)
    memo.note_edit(130, 130, 135, line_break=False)
    assert memo.line_scope is not None and memo.suffix_end is None


def test_a_line_break_typed_on_the_line_drops_the_suffix_end() -> None:
    memo = memo_on_line(100, 120)
    memo.note_edit(120, 120, 121, line_break=True)
    assert memo.line_scope is not None and memo.suffix_end is None


def change(doc: Document, start: Position, end: Position, text: str) -> None:
    doc.apply_changes(
        [TextDocumentContentChangePartial(range=Range(start=start, end=end), text=text)]
    )


def test_a_document_reports_its_edits_to_its_memo() -> None:
    doc = DocumentStore().open("file:///t.js", "javascript", 1, SOURCE)
    end_of_sum = Position(line=3, character=len("    sum += item.price;"))
    first = syntax_context(doc, end_of_sum)
    assert doc.line_memo.line_scope is not None and doc.line_memo.suffix_end is not None
    change(doc, end_of_sum, end_of_sum, " // x")
    typed = syntax_context(doc, Position(line=3, character=end_of_sum.character + 5))
    assert typed.line_context == first.line_context
    change(doc, Position(line=0, character=9), Position(line=0, character=14), "grand")
    assert doc.line_memo.line_scope is None and doc.line_memo.suffix_end is None
    renamed = syntax_context(doc, Position(line=3, character=end_of_sum.character + 5))
    assert renamed.scope_heads != typed.scope_heads
    doc.replace_text(SOURCE)
    assert doc.line_memo.line_scope is None

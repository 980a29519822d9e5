from __future__ import annotations

import pytest
from lsprotocol.types import Position, Range, TextDocumentContentChangePartial

from lsp_server.documents.cross_file import CHUNK_LINES, CrossFileContext
from lsp_server.documents.document import Document
from lsp_server.documents.store import DocumentStore
from lsp_server.settings import Settings
from transport.backend import ContextChunk

ROOT = "file:///work/shop"
MAIN = f"{ROOT}/app/main.py"
SHAPES = f"{ROOT}/app/shapes.py"
NOTES = f"{ROOT}/docs/notes.py"

SHAPES_TEXT = '''import math


def area(r):
    """Area of a circle."""
    return math.pi * r * r


def perimeter(r):
    return 2 * math.pi * r


class Square:
    def __init__(self, side):
        self.side = side
'''

MAIN_TEXT = """from app.shapes import area, Square
from .helpers import nothing_open


def report(r):
    print(area(r))
"""

NOTES_TEXT = "".join(f"note_{n} = {n}\n" for n in range(200))


@pytest.fixture
def store() -> DocumentStore:
    return DocumentStore()


@pytest.fixture
def settings() -> Settings:
    return Settings()


@pytest.fixture
def context(store: DocumentStore, settings: Settings) -> CrossFileContext:
    return CrossFileContext(store, lambda: settings, root=lambda: ROOT)


def open_doc(
    store: DocumentStore, context: CrossFileContext, uri: str, text: str, language: str = "python"
) -> Document:
    doc = store.open(uri, language, 1, text)
    context.note_open(uri)
    return doc


def edit(
    store: DocumentStore, context: CrossFileContext, doc: Document, line: int, text: str
) -> None:
    pos = Position(line=line, character=0)
    store.change(
        doc.uri,
        doc.version + 1,
        [TextDocumentContentChangePartial(range=Range(start=pos, end=pos), text=text)],
    )
    context.note_edit(doc.uri, line)


def test_definitions_of_imported_names_come_from_the_open_file_that_defines_them(
    store: DocumentStore, context: CrossFileContext
) -> None:
    open_doc(store, context, SHAPES, SHAPES_TEXT)
    main = open_doc(store, context, MAIN, MAIN_TEXT)
    chunks = context.chunks_for(main)
    texts = [c.text for c in chunks]
    assert any(t.startswith("def area(r):") for t in texts)
    assert any(t.startswith("class Square:") for t in texts)
    assert not any(t.startswith("def perimeter") for t in texts)  # not imported
    assert all(c.filename == "app/shapes.py" for c in chunks)


def test_other_documents_send_the_block_around_their_last_edit(
    store: DocumentStore, context: CrossFileContext
) -> None:
    notes = open_doc(store, context, NOTES, NOTES_TEXT)
    main = open_doc(store, context, MAIN, MAIN_TEXT)
    (first,) = context.chunks_for(main)
    assert first.text.startswith("note_0 = 0\n")
    edit(store, context, notes, 100, "edited = True\n")
    (region,) = context.chunks_for(main)
    block = 100 // CHUNK_LINES * CHUNK_LINES
    assert region.text.startswith(f"note_{block} = {block}\n")
    assert "edited = True\n" in region.text
    assert region.filename == "docs/notes.py"


def test_chunks_are_byte_identical_while_typing_in_the_current_document(
    store: DocumentStore, context: CrossFileContext
) -> None:
    open_doc(store, context, SHAPES, SHAPES_TEXT)
    open_doc(store, context, NOTES, NOTES_TEXT)
    main = open_doc(store, context, MAIN, MAIN_TEXT)
    before = context.chunks_for(main)
    for n in range(40):
        edit(store, context, main, 6, f"    x{n} = {n}\n")
        assert context.chunks_for(main) == before


def test_a_changed_chunk_moves_to_the_end_and_the_others_keep_their_places(
    store: DocumentStore, context: CrossFileContext
) -> None:
    shapes = open_doc(store, context, SHAPES, SHAPES_TEXT)
    open_doc(store, context, NOTES, NOTES_TEXT)
    main = open_doc(store, context, MAIN, MAIN_TEXT)
    before = context.chunks_for(main)
    # the definition of area changes; Square and the notes stay put
    edit(store, context, shapes, 5, "    # circles only\n")
    after = context.chunks_for(main)
    changed = [c for c in after if c not in before]
    assert changed and after[-len(changed) :] == tuple(changed)
    kept = [c for c in before if c in after]
    assert after[: len(kept)] == tuple(kept)


def test_the_chunks_never_exceed_the_budget(
    store: DocumentStore, context: CrossFileContext, settings: Settings
) -> None:
    settings.context.max_chars = 500
    for n in range(10):
        open_doc(store, context, f"{ROOT}/lib/m{n}.py", NOTES_TEXT)
    main = open_doc(store, context, MAIN, MAIN_TEXT)
    chunks = context.chunks_for(main)
    assert chunks
    assert sum(len(c.text) + len(c.filename) + 1 for c in chunks) <= 500


WIDE_TEXT = "".join(f"wide_{n} = '{'x' * 40}'\n" for n in range(200))


def test_a_region_larger_than_the_budget_is_cut_to_a_smaller_block_around_the_edit(
    store: DocumentStore, context: CrossFileContext, settings: Settings
) -> None:
    # 32 of these lines are about 1,700 characters: more than the whole budget
    settings.context.max_chars = 800
    wide = open_doc(store, context, f"{ROOT}/lib/wide.py", WIDE_TEXT)
    edit(store, context, wide, 100, "edited = True\n")
    main = open_doc(store, context, MAIN, MAIN_TEXT)
    (region,) = context.chunks_for(main)
    assert len(region.text) + len(region.filename) + 1 <= 800
    assert "edited = True\n" in region.text
    # 16 lines do not fit, 8 do: the aligned block of 8 around line 100
    lines = region.text.splitlines()
    assert len(lines) == 8
    assert lines[0].startswith("wide_96 = ")
    for n in range(20):
        edit(store, context, main, 6, f"    x{n} = {n}\n")
        assert context.chunks_for(main) == (region,)


def test_a_definition_larger_than_the_budget_sends_its_first_lines(
    store: DocumentStore, context: CrossFileContext, settings: Settings
) -> None:
    settings.context.max_chars = 120
    body = "".join(f"    step_{n} = {n} * r\n" for n in range(30))
    open_doc(store, context, SHAPES, f"def area(r):\n{body}    return r\n")
    main = open_doc(store, context, MAIN, MAIN_TEXT)
    (definition,) = context.chunks_for(main)
    assert definition.text.startswith("def area(r):\n    step_0 = 0 * r\n")
    assert len(definition.text) + len(definition.filename) + 1 <= 120
    assert definition.text.endswith("\n")


def test_excluded_files_and_credentials_never_leave(
    store: DocumentStore, context: CrossFileContext
) -> None:
    open_doc(store, context, f"{ROOT}/.env", "DEBUG=1\n")
    open_doc(store, context, f"{ROOT}/secrets/prod.py", "HOST = 'db'\n")
    open_doc(store, context, f"{ROOT}/app/config.py", 'API_KEY = "sk-abcdefghijklmnopqrstuvwx"\n')
    open_doc(store, context, f"{ROOT}/app/keys.py", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n")
    main = open_doc(store, context, MAIN, MAIN_TEXT)
    assert context.chunks_for(main) == ()


def test_the_document_being_completed_is_never_its_own_context(
    store: DocumentStore, context: CrossFileContext
) -> None:
    main = open_doc(store, context, MAIN, MAIN_TEXT)
    assert context.chunks_for(main) == ()


def test_cross_file_context_can_be_switched_off(
    store: DocumentStore, context: CrossFileContext, settings: Settings
) -> None:
    open_doc(store, context, SHAPES, SHAPES_TEXT)
    main = open_doc(store, context, MAIN, MAIN_TEXT)
    settings.context.cross_file = False
    assert context.chunks_for(main) == ()


def test_a_closed_document_is_no_longer_sent(
    store: DocumentStore, context: CrossFileContext
) -> None:
    open_doc(store, context, SHAPES, SHAPES_TEXT)
    main = open_doc(store, context, MAIN, MAIN_TEXT)
    assert context.chunks_for(main)
    store.close(SHAPES)
    context.forget(SHAPES)
    assert context.chunks_for(main) == ()


def test_relative_imports_resolve_beside_the_importer(
    store: DocumentStore, context: CrossFileContext
) -> None:
    open_doc(store, context, f"{ROOT}/app/helpers.py", "def nothing_open():\n    return None\n")
    main = open_doc(store, context, MAIN, MAIN_TEXT)
    assert ContextChunk("app/helpers.py", "def nothing_open():\n    return None\n") in (
        context.chunks_for(main)
    )


SHAPES_TS = """import { sqrt } from 'mathlib';

export function area(r: number): number {
  return Math.PI * r * r;
}

export const perimeter = (r: number) => 2 * Math.PI * r;

export interface Shape {
  side: number;
}

export default class Square {
  constructor(public side: number) {}
}
"""

MAIN_TS = """import Square, { area, Shape as S } from './shapes';
import { nothing } from 'some-package';

export function report(r: number) {
  console.log(area(r));
}
"""


def test_typescript_imports_send_the_named_and_default_definitions(
    store: DocumentStore, context: CrossFileContext
) -> None:
    open_doc(store, context, f"{ROOT}/src/shapes.ts", SHAPES_TS, "typescript")
    main = open_doc(store, context, f"{ROOT}/src/main.ts", MAIN_TS, "typescript")
    chunks = context.chunks_for(main)
    texts = [c.text for c in chunks if c.text.startswith("export ")]
    assert any(t.startswith("export function area(") for t in texts)
    assert any(t.startswith("export interface Shape") for t in texts)
    assert any(t.startswith("export default class Square") for t in texts)
    # not imported: left to the region chunk of the file, not sent as a definition
    assert not any(t.startswith("export const perimeter") for t in texts)
    assert chunks[0].filename == "src/shapes.ts"


def test_javascript_finds_an_index_file_and_typescript_a_javascript_file(
    store: DocumentStore, context: CrossFileContext
) -> None:
    open_doc(store, context, f"{ROOT}/src/util/index.js",
             "export function clamp(x) {\n  return x;\n}\n", "javascript")
    main = open_doc(store, context, f"{ROOT}/src/main.ts",
                    "import { clamp } from './util';\n", "typescript")
    definition, *_region = context.chunks_for(main)
    assert definition.text == "export function clamp(x) {\n  return x;\n}\n"
    assert definition.filename == "src/util/index.js"


SHAPES_GO = """package shapes

import "math"

// Area of a circle.
func Area(r float64) float64 {
\treturn math.Pi * r * r
}

func helper() int { return 1 }

type Square struct {
\tSide float64
}

func (s Square) Perimeter() float64 { return 4 * s.Side }
"""

MAIN_GO = """package main

import (
\t"fmt"
\t"example.com/shop/shapes"
)

func main() {
\tfmt.Println(shapes.Area(2))
}
"""


def test_go_imports_send_the_packages_exported_definitions(
    store: DocumentStore, context: CrossFileContext, settings: Settings
) -> None:
    settings.context.max_chars = 1000
    open_doc(store, context, f"{ROOT}/shapes/area.go", SHAPES_GO, "go")
    main = open_doc(store, context, f"{ROOT}/cmd/main.go", MAIN_GO, "go")
    chunks = context.chunks_for(main)
    texts = [c.text for c in chunks]
    assert texts[0].startswith("func Area(r float64)")
    assert any(t.startswith("type Square struct") for t in texts)
    assert any(t.startswith("func (s Square) Perimeter()") for t in texts)
    assert not any(t.startswith("func helper()") for t in texts)
    assert all(c.filename == "shapes/area.go" for c in chunks)


def test_imported_definitions_keep_their_order_while_typing(
    store: DocumentStore, context: CrossFileContext
) -> None:
    open_doc(store, context, f"{ROOT}/shapes/area.go", SHAPES_GO, "go")
    open_doc(store, context, f"{ROOT}/src/shapes.ts", SHAPES_TS, "typescript")
    go_main = open_doc(store, context, f"{ROOT}/cmd/main.go", MAIN_GO, "go")
    ts_main = open_doc(store, context, f"{ROOT}/src/main.ts", MAIN_TS, "typescript")
    for doc, line, typed in ((go_main, 8, "\tx := 1\n"), (ts_main, 4, "  const y = 1;\n")):
        before = context.chunks_for(doc)
        assert any(c.filename in ("shapes/area.go", "src/shapes.ts") for c in before)
        for _ in range(20):
            edit(store, context, doc, line, typed)
            assert context.chunks_for(doc) == before


def test_imported_definitions_respect_the_budget_and_exclusion(
    store: DocumentStore, context: CrossFileContext, settings: Settings
) -> None:
    settings.context.max_chars = 150
    open_doc(store, context, f"{ROOT}/src/shapes.ts", SHAPES_TS, "typescript")
    main = open_doc(store, context, f"{ROOT}/src/main.ts", MAIN_TS, "typescript")
    chunks = context.chunks_for(main)
    assert chunks
    assert sum(len(c.text) + len(c.filename) + 1 for c in chunks) <= 150
    settings.exclude = [*settings.exclude, "**/shapes.ts"]
    assert context.chunks_for(main) == ()

"""A definition that no longer parses keeps its key when the definition above is edited.

While a line is half written (or the definition's end is not written yet),
tree-sitter's error recovery can stop parsing the definition as a scope: in
Rust the whole file becomes one ``ERROR`` node, in TypeScript ``export
function f() {`` becomes an expression. The scope found is then the file,
and its text before the cursor reaches into the definitions above. The key
and the line anchor must still not change when one of those is edited: the
bodies of the finished definitions beside the cursor are left out of the
text they cover, their headers are not (found by
``tests.bench.bench_scope_probe`` on Rust's ``core::option``, where one
answer in four was lost this way).
"""

from __future__ import annotations

from lsprotocol.types import Position, Range, TextDocumentContentChangePartial

from lsp_server.completion.pipeline import keys_for
from lsp_server.documents.document import Document
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import SyntaxContext, syntax_context

STACK_RS = """\
use std::fmt;

/// A stack of items, newest on top.
pub struct Stack<T> {
    items: Vec<T>,
}

impl<T: fmt::Debug> Stack<T> {
    /// An empty stack.
    pub fn new() -> Self {
        Stack { items: Vec::new() }
    }

    /// Puts an item on top.
    #[inline]
    pub fn push(&mut self, item: T) {
        let before = self.items.len();
        self.items.push(item);
        debug_assert_eq!(self.items.len(), before + 1);
    }

    /// The items from the top down.
    #[inline]
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { inner: Item { slice: &self.items } }
    }
}
"""

PRICES_TS = """\
export function total(prices: number[]): number {
  let sum = 0;
  for (const p of prices) {
    sum += p;
  }
  return sum;
}

export function label(name: string, count: number): string {
  if (typeof name !== "string") {
    throw new TypeError("name must be a string");
  }
  return `${name.trim()} x${count}`;
}
"""


def open_doc(name: str, language: str, text: str) -> tuple[DocumentStore, Document]:
    store = DocumentStore()
    return store, store.open(f"file:///work/{name}", language, 1, text)


def replace(store: DocumentStore, doc: Document, start: Position, end: Position, text: str) -> None:
    change = TextDocumentContentChangePartial(range=Range(start=start, end=end), text=text)
    store.change(doc.uri, doc.version + 1, [change])


def line_of(text: str, marker: str) -> int:
    return next(i for i, line in enumerate(text.split("\n")) if marker in line)


def end_of(text: str, line: int) -> Position:
    return Position(line=line, character=len(text.split("\n")[line]))


def cut_then_edit_above(
    store: DocumentStore, doc: Document, cut: Position, rest_end: Position, above: int
) -> tuple[SyntaxContext, SyntaxContext]:
    """The contexts at ``cut`` once the text up to ``rest_end`` is gone, before and after
    a comment is appended to line ``above``."""
    replace(store, doc, cut, rest_end, "")
    before = syntax_context(doc, cut)
    end = end_of(doc.text, above)
    replace(store, doc, end, end, " // note")
    return before, syntax_context(doc, cut)


def test_a_half_written_rust_method_keeps_its_key_when_the_method_above_is_edited() -> None:
    store, doc = open_doc("stack.rs", "rust", STACK_RS)
    row = line_of(STACK_RS, "Iter { inner:")
    column = len("        Iter { inner: Item {")
    before, after = cut_then_edit_above(
        store, doc, Position(line=row, character=column), end_of(STACK_RS, row),
        line_of(STACK_RS, "let before"),
    )
    assert doc.tree is not None and doc.tree.root_node.type == "ERROR"  # the impl is gone
    assert keys_for(after) == keys_for(before)
    # the body of the method above is left out of the text, its header is not
    for text in (before.scope_prefix, before.line_context):
        assert "self.items.push(item);" not in text
        assert "pub fn push(&mut self, item: T) " in text


def test_a_typescript_function_being_written_keeps_its_key_when_the_export_above_is_edited(
) -> None:
    store, doc = open_doc("prices.ts", "typescript", PRICES_TS)
    row = line_of(PRICES_TS, "if (typeof name")
    column = len('  if (typeof name !== "s')
    last = len(PRICES_TS.split("\n")) - 2  # the function's closing brace, not written yet
    before, after = cut_then_edit_above(
        store, doc, Position(line=row, character=column), end_of(PRICES_TS, last),
        line_of(PRICES_TS, "let sum"),
    )
    assert before.scope_chain == ("program",)  # ``label`` no longer parses as a function
    assert keys_for(after) == keys_for(before)
    assert "let sum = 0;" not in before.scope_prefix
    assert "export function total(prices: number[]): number " in before.scope_prefix


def test_a_clean_tree_keeps_the_scope_start_even_after_a_definition_beside_the_cursor() -> None:
    text = STACK_RS.replace(
        "        let before = self.items.len();\n",
        "        let check = |n: usize| n > 0;\n        let before = self.items.len();\n",
    )
    store, doc = open_doc("stack.rs", "rust", text)
    row = line_of(text, "let before")
    ctx = syntax_context(doc, end_of(text, row))
    assert doc.tree is not None and not doc.tree.root_node.has_error
    assert ctx.scope_prefix.startswith("pub fn push(")


SHAPES_CPP = """\
namespace shapes {

struct Point {
    int x;
    int y;
};

class Circle {
public:
    double area() const { return 3.14159 * r_ * r_; }
private:
    double r_ = 1.0;
};

"""


def test_after_two_finished_definitions_in_an_unclosed_namespace_the_keys_differ() -> None:
    # written top-down, the namespace has no closing brace yet, and the text
    # after either definition is the same ";\n\n" with nothing after the cursor:
    # what tells them apart is the definitions' headers
    first = SHAPES_CPP[: SHAPES_CPP.index("class Circle")]
    contexts = []
    for text in (first, SHAPES_CPP):
        _, doc = open_doc("shapes.cpp", "cpp", text)
        assert doc.tree is not None and doc.tree.root_node.has_error
        contexts.append(syntax_context(doc, Position(line=text.count("\n"), character=0)))
    after_point, after_circle = contexts
    assert keys_for(after_point)[0] != keys_for(after_circle)[0]
    assert keys_for(after_point)[1] != keys_for(after_circle)[1]


QUEUE_GO = """\
package queue

type Queue struct {
\tjobs []string
}

func New(limit int) *Queue {
\t
"""


def test_the_head_of_the_function_being_written_is_not_a_finished_definition() -> None:
    # ``func New(limit int) *Queue`` parses as a declaration without a body;
    # the text must still start before it, or every new function's first
    # line would share one key
    store, doc = open_doc("queue.go", "go", QUEUE_GO)
    ctx = syntax_context(doc, Position(line=line_of(QUEUE_GO, "func New") + 1, character=1))
    assert "func New(limit int) *Queue {" in ctx.scope_prefix
    other = QUEUE_GO.replace("func New(limit int) *Queue {", "func (q *Queue) Len() int {")
    store, doc = open_doc("queue.go", "go", other)
    ctx_other = syntax_context(doc, Position(line=line_of(other, "Len()") + 1, character=1))
    assert keys_for(ctx)[0] != keys_for(ctx_other)[0]

"""Two nested scopes with the same text in different enclosing functions.

Found on zod 3.25.76's ``src/v4/core/util.ts`` (``python -m
tests.bench.bench_real_world``): ``extend(schema, shape)`` and ``merge(a, b)``
each hold an object getter ``get shape() { ... }`` whose last lines are the
same. A key covering the innermost scope only gave a line retyped at the
start of the second getter's body the first's key, and served it the first's
answer, which names the other function's parameters (18 stale serves in the
synthesized session). Keys and anchors now cover the enclosing scopes' first
lines, in a finished file and in one still being written (where the
function without its closing brace is an ``ERROR`` node, not a scope).
"""

from __future__ import annotations

import pytest
from lsprotocol.types import Position

from cache.keys import LineAnchor, ScopeKey
from lsp_server.completion.pipeline import keys_for
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import syntax_context

TEXT = """\
import { assign, clone } from "./object";

export function keys(o: object): string[] {
  return Object.keys(o);
}

export function extend(schema: Schema, shape: Shape): any {
  const def = {
    ...schema.def,
    get shape() {
      const merged = { ...schema.def.shape, ...shape };
      assign(this, "shape", merged);
      return merged;
    },
  };
  return clone(schema, def);
}

export function merge(a: Schema, b: Schema): any {
  return clone(a, {
    ...a.def,
    get shape() {
      const merged = { ...a.def.shape, ...b.def.shape };
      assign(this, "shape", merged);
      return merged;
    },
  });
}
"""
FIRST, SECOND = 10, 22  # the getters' first body lines


def keys_retyping(row: int, *, written_up_to: bool = False) -> tuple[ScopeKey, LineAnchor]:
    """The key and anchor at the start of ``row`` once it is deleted to be typed again.

    ``written_up_to``: the file ends there, as while a developer writes it top down.
    """
    lines = TEXT.split("\n")
    indent = "      "
    assert lines[row].startswith(indent + "const merged")
    lines[row] = indent
    if written_up_to:
        lines = lines[: row + 1]
    doc = DocumentStore().open("file:///x/util.ts", "typescript", 1, "\n".join(lines))
    ctx = syntax_context(doc, Position(line=row, character=len(indent)))
    assert ctx.parsed and ctx.scope_chain[-1] == "method_definition"
    return keys_for(ctx)


@pytest.mark.parametrize("written_up_to", [False, True], ids=["finished", "being-written"])
def test_identical_getters_in_different_functions_share_no_key_or_anchor(
    written_up_to: bool,
) -> None:
    first = keys_retyping(FIRST, written_up_to=written_up_to)
    second = keys_retyping(SECOND, written_up_to=written_up_to)
    assert first[0] != second[0] and first[1] != second[1]


LONG = (
    "export function total(items: Item[], tax: number): number {\n"
    + "".join(f"  const v{n} = items[{n}].price * tax;\n" for n in range(400))
    + "  return \n"
    + "}\n"
)


def test_a_header_edit_far_above_the_line_changes_the_key() -> None:
    # The header is more than the line context's window (8,000 bytes) above the
    # cursor: only the scope heads see it. A same-length edit keeps every offset.
    row = LONG.count("\n") - 2
    doc = DocumentStore().open("file:///x/total.ts", "typescript", 1, LONG)
    cursor = Position(line=row, character=len("  return "))
    before = keys_for(syntax_context(doc, cursor))
    memo = doc.line_memo.line_scope
    assert keys_for(syntax_context(doc, cursor)) == before
    assert doc.line_memo.line_scope is memo  # asked again on the same line: reused
    assert LONG.index("tax: number") < len(LONG.encode()) - 8000 - 20
    doc.replace_text(LONG.replace("tax: number", "vat: number", 1))
    after = keys_for(syntax_context(doc, cursor))
    assert after[0] != before[0] and after[1] != before[1]

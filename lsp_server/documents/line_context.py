"""The line context: scope-local text before the cursor's line, stable while typing.

The scope enclosing the end of the text before the cursor's line (its last
non-whitespace byte) decides where ``line_context`` starts; what is typed on
the line itself never moves it. An incomplete line can make tree-sitter's
error recovery flatten the enclosing class or function into an ``ERROR``
node (``    def f(s`` inside a class does), which would move the start to the
module and change every line anchor on the line mid-word; in brace languages
the error may sit after the line (the function's ``}`` went missing) and
still reshape the scope. So each document
remembers the scope start found for the line it was last asked about, with
the bounded window of text before the line; while that text is byte-for-byte
unchanged and the tree is in error, the remembered start is reused (a clean
parse always replaces it). The context is still the text itself, so a
remembered start can only cost a hit, never serve a stale one.

``suffix_bound`` does the same for where the suffix window stops, in languages
whose scopes end at a closing token: typing ``if x {`` or ``each do`` on a
line moves the end of the enclosing function (its ``}`` or ``end`` now
closes the new block) although nothing after the cursor changed. While the
cursor stays on one line and the text before the line and a bounded window
after it are unchanged, the end found first is kept (as a distance from the
end of the document, which typing on the line does not move). Python's
scopes follow the line's indentation, which typing on the line does move,
so there the remembered end also requires the same indentation.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from tree_sitter import Node, Tree

from lsp_server.documents.document import Document
from lsp_server.documents.languages import LanguageSpec
from lsp_server.documents.syntax_reads import ERROR_NODE, last_content_byte, node_path, tail_text


@dataclass(frozen=True, slots=True)
class _LineScope:
    """Where the scope of a line's preceding text starts, and the text it was found for."""

    line_start: int
    window: int
    #: ``data[window:line_start]`` then: the memo holds while it is unchanged
    before: bytes
    scope_start: int
    #: found on a tree without errors around the line (else the first guess)
    clean: bool


#: per document, the scope start of the line most recently asked about
_line_scopes: weakref.WeakKeyDictionary[Document, _LineScope] = weakref.WeakKeyDictionary()


def line_context(
    doc: Document, tree: Tree, spec: LanguageSpec, line_start: int, scope_chars: int
) -> str:
    """Scope-local text before the line, from the scope enclosing the line's start."""
    data = doc.buffer.data
    window = max(0, line_start - 4 * scope_chars)
    head = last_content_byte(data, window, line_start)
    scope_start = 0
    if head is not None:
        path = node_path(tree, head)
        memo = _line_scopes.get(doc)
        same_text = (
            memo is not None
            and memo.line_start == line_start
            and memo.window == window
            and data[window:line_start] == memo.before
        )
        if tree.root_node.has_error or any(node.type == ERROR_NODE for node in path):
            # error recovery around an incomplete line: keep what was found first
            if memo is not None and same_text:
                scope_start = memo.scope_start
            else:
                scope_start = _scope_start(tree, spec, path)
                before = bytes(data[window:line_start])
                _line_scopes[doc] = _LineScope(line_start, window, before, scope_start, False)
        else:
            scope_start = _scope_start(tree, spec, path)
            if memo is None or not same_text or not memo.clean or memo.scope_start != scope_start:
                before = bytes(data[window:line_start])
                _line_scopes[doc] = _LineScope(line_start, window, before, scope_start, True)
    return tail_text(data, max(window, scope_start), line_start, scope_chars)


def _scope_start(tree: Tree, spec: LanguageSpec, path: list[Node]) -> int:
    """Start of the innermost scope (below the root) on ``path``; 0 for the root."""
    start = 0
    for node in spec.scopes_on(path):
        if node != tree.root_node:
            start = node.start_byte
    return start


@dataclass(frozen=True, slots=True)
class _SuffixEnd:
    """Where the suffix window of a line stopped, and the text around the line then."""

    line_start: int
    before: bytes
    after: bytes
    #: the line's indentation (it decides Python's scope)
    indent: bytes
    #: ``len(data) - end``: typing on the line does not move it
    from_end: int


_suffix_ends: weakref.WeakKeyDictionary[Document, _SuffixEnd] = weakref.WeakKeyDictionary()


def suffix_bound(
    doc: Document, spec: LanguageSpec, line_start: int, line_end: int, scope_end: int,
    window: int,
) -> int:
    """The end of the suffix window: ``scope_end``, or the one found first on this line."""
    data = doc.buffer.data
    before = bytes(data[max(0, line_start - window) : line_start])
    after = bytes(data[line_end : line_end + window])
    line = bytes(data[line_start:line_end])
    indent = line[: len(line) - len(line.lstrip())] if spec.indent_scoped else b""
    memo = _suffix_ends.get(doc)
    if (
        memo is not None
        and memo.line_start == line_start
        and memo.indent == indent
        and memo.before == before
        and memo.after == after
    ):
        return max(line_end, len(data) - memo.from_end)
    _suffix_ends[doc] = _SuffixEnd(line_start, before, after, indent, len(data) - scope_end)
    return scope_end

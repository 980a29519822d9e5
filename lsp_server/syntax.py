"""The syntax context at a cursor: what the cache key and the prompt are made of.

``syntax_context(doc, position)`` reads only bounded windows of text and one
root-to-leaf descent of the tree, so its cost does not grow with the file.

Rules, chosen to stay stable while the user types incomplete code:

* **Anchor**: the last non-whitespace byte before the cursor (looked for in
  the prefix window). The *node* is the deepest named node containing the
  anchor; the *parent* is the nearest named ancestor that is not an ``ERROR``
  wrapper (``"none"`` at the root). With no anchor the node is the root.
* **Scopes**: the anchor's ancestors whose type the language lists as scopes,
  outermost first; the root is always the first. ``scope_depth`` counts the
  scopes below the root (module level is 0).
* **Indentation** (languages with ``indent_scoped``, i.e. Python): when only
  whitespace precedes the cursor on its line, a block or scope whose header
  starts at or right of the cursor's column is closed: it becomes the node,
  and neither it nor anything inside it is an enclosing scope. So a new line
  at column 0 after a function is at module level, and the same line indented
  stays in the function's body.
* **Line context**: the scope enclosing the end of the text before the
  cursor's line (its last non-whitespace byte) decides where
  ``line_context`` starts; what is typed on the line itself never moves it.
  An incomplete line can make tree-sitter's error recovery flatten the
  enclosing class or function into an ``ERROR`` node (``    def f(s``
  inside a class does), which would move the start to the module and change
  every line anchor on the line mid-word. So each document remembers the
  scope start found for the line it was last asked about, with the bounded
  window of text before the line; while that text is byte-for-byte unchanged
  and the tree there is in error, the remembered start is reused (a clean
  parse always replaces it). The context is still the text itself, so a
  remembered start can only cost a hit, never serve a stale one.
* **Windows**: ``scope_prefix`` runs from the start of the enclosing scope to
  the cursor (last ``scope_chars`` characters); ``suffix`` runs from the
  cursor for ``suffix_lines``/``suffix_chars`` but never past the end of the
  enclosing scope, so an edit outside the scope changes neither; ``prefix``
  may reach outside the scope.
* Without a tree (no grammar, too large, binary) the context is text only:
  depth 0, node and parent ``"text"``, and the scope is the prefix window.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass

from lsprotocol.types import Position
from tree_sitter import Node, Tree

from lsp_server.documents import Document
from lsp_server.languages import LanguageSpec
from lsp_server.positions import TextBuffer, char_start, decode_text
from lsp_server.settings import CompletionSettings

logger = logging.getLogger(__name__)

#: lines before the cursor's line kept in ``preceding_lines``
PRECEDING_LINES = 3
NO_PARENT = "none"
TEXT_NODE = "text"
_ERROR = "ERROR"


@dataclass(frozen=True, slots=True)
class SyntaxContext:
    """Everything the cache key and the prompt need about one cursor position."""

    language: str
    line: int
    character: int
    offset: int
    scope_chain: tuple[str, ...]
    scope_depth: int
    node_type: str
    parent_type: str
    scope_start_byte: int
    scope_end_byte: int
    scope_prefix: str
    line_prefix: str
    line_suffix: str
    preceding_lines: tuple[str, ...]
    #: scope-local text before the cursor's line: from the start of the scope
    #: enclosing the line's start (so typing on the line never changes it) to
    #: the line start, last ``scope_chars`` characters
    line_context: str
    prefix: str
    suffix: str
    at_line_start: bool
    block_opener: bool
    parsed: bool
    #: the position was out of range (or inside a character) and was clamped
    clamped: bool = False


def syntax_context(
    doc: Document,
    position: Position,
    *,
    prefix_chars: int = 4000,
    prefix_lines: int = 120,
    suffix_chars: int = 1000,
    suffix_lines: int = 30,
    scope_chars: int = 2000,
) -> SyntaxContext:
    """The syntax context of ``doc`` at ``position`` (clamped; never raises on a bad one)."""
    buf = doc.buffer
    data = buf.data
    where = doc.resolve(position)
    off, line = where.offset, where.line
    line_start, line_end = buf.line_start(line), buf.line_end(line)

    line_prefix = _tail(data, line_start, off, prefix_chars)
    line_suffix = _head(data, off, line_end, suffix_chars)
    at_line_start = line_prefix.strip() == ""
    preceding = tuple(
        _tail(data, buf.line_start(n), buf.line_end(n), prefix_chars)
        for n in range(max(0, line - PRECEDING_LINES), line)
    )
    window_start = max(buf.line_start(max(0, line - prefix_lines)), off - 4 * prefix_chars)
    prefix = _tail(data, window_start, off, prefix_chars)
    last_line = min(buf.line_count - 1, line + suffix_lines)
    suffix_end = min(buf.line_end(last_line), off + 4 * suffix_chars)

    tree, spec = doc.tree, doc.spec
    stripped = data[window_start:off].rstrip()
    anchor = window_start + len(stripped) - 1 if stripped else None
    if tree is None or spec is None:
        return SyntaxContext(
            language=doc.language,
            line=line,
            character=where.character,
            offset=off,
            scope_chain=(),
            scope_depth=0,
            node_type=TEXT_NODE,
            parent_type=TEXT_NODE,
            scope_start_byte=window_start,
            scope_end_byte=suffix_end,
            scope_prefix=_tail(data, window_start, off, scope_chars),
            line_prefix=line_prefix,
            line_suffix=line_suffix,
            preceding_lines=preceding,
            line_context=_tail(data, max(0, line_start - 4 * scope_chars), line_start, scope_chars),
            prefix=prefix,
            suffix=_head(data, off, suffix_end, suffix_chars),
            at_line_start=at_line_start,
            block_opener=_text_opener(data, anchor, line_start, line_suffix, at_line_start, spec),
            parsed=False,
            clamped=where.clamped,
        )

    path = _path_to(tree, anchor) if anchor is not None else [tree.root_node]
    opener = _block_opener(tree, spec, buf, path, anchor, line_start, line_suffix, at_line_start)
    closed: Node | None = None
    if spec.indent_scoped and at_line_start and anchor is not None and anchor < line_start:
        path, closed = _close_by_indent(buf, spec, path, off - line_start)
        # the block the previous line opened is closed again at this indentation
        opener = opener and closed is None
    named = [n for n in path if n.is_named]
    node = closed if closed is not None else named[-1]
    parents = [n for n in named if n != node and n.type != _ERROR]
    scopes = (
        [n for n in path[:-1] if n.type in spec.scope_types]
        if closed
        else [n for n in path if n.type in spec.scope_types]
    )
    root = tree.root_node
    if not scopes or scopes[0] != root:
        scopes.insert(0, root)
    scope = scopes[-1]
    scope_start = 0 if scope == root else scope.start_byte
    scope_end = len(data) if scope == root else scope.end_byte
    return SyntaxContext(
        language=doc.language,
        line=line,
        character=where.character,
        offset=off,
        scope_chain=tuple(s.type for s in scopes),
        scope_depth=len(scopes) - 1,
        node_type=node.type,
        parent_type=parents[-1].type if parents else NO_PARENT,
        scope_start_byte=scope_start,
        scope_end_byte=scope_end,
        scope_prefix=_tail(data, max(scope_start, off - 4 * scope_chars), off, scope_chars),
        line_prefix=line_prefix,
        line_suffix=line_suffix,
        preceding_lines=preceding,
        line_context=_line_context(doc, tree, spec, line_start, scope_chars),
        prefix=prefix,
        suffix=_head(data, off, min(suffix_end, max(off, scope_end)), suffix_chars),
        at_line_start=at_line_start,
        block_opener=opener,
        parsed=True,
        clamped=where.clamped,
    )


def completion_context(
    doc: Document, position: Position, windows: CompletionSettings
) -> SyntaxContext:
    """``syntax_context`` with the prompt and key windows of the completion settings."""
    return syntax_context(
        doc,
        position,
        prefix_chars=windows.prefix_chars,
        prefix_lines=windows.prefix_lines,
        suffix_chars=windows.suffix_chars,
        suffix_lines=windows.suffix_lines,
        scope_chars=windows.scope_chars,
    )


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


def _line_context(
    doc: Document, tree: Tree, spec: LanguageSpec, line_start: int, scope_chars: int
) -> str:
    """Scope-local text before the line, from the scope enclosing the line's start."""
    data = doc.buffer.data
    window = max(0, line_start - 4 * scope_chars)
    head = data[window:line_start].rstrip()
    scope_start = 0
    if head:
        path = _path_to(tree, window + len(head) - 1)
        memo = _line_scopes.get(doc)
        same_text = (
            memo is not None
            and memo.line_start == line_start
            and memo.window == window
            and data[window:line_start] == memo.before
        )
        if any(node.type == _ERROR for node in path):
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
    return _tail(data, max(window, scope_start), line_start, scope_chars)


def _scope_start(tree: Tree, spec: LanguageSpec, path: list[Node]) -> int:
    """Start of the innermost scope (below the root) on ``path``; 0 for the root."""
    start = 0
    for node in path:
        if node.type in spec.scope_types and node != tree.root_node:
            start = node.start_byte
    return start


def _path_to(tree: Tree, byte: int) -> list[Node]:
    """Root and every descendant containing ``byte``, outermost first (one descent)."""
    cursor = tree.walk()
    path = [tree.root_node]
    while cursor.goto_first_child_for_byte(byte) is not None:
        node = cursor.node
        if node is None or node.start_byte > byte:
            break
        path.append(node)
    return path


def _close_by_indent(
    buf: TextBuffer, spec: LanguageSpec, path: list[Node], column: int
) -> tuple[list[Node], Node | None]:
    """Cut ``path`` at the outermost block whose header is not left of ``column``."""
    for i, node in enumerate(path[1:], start=1):
        if node.type not in spec.block_types and node.type not in spec.scope_types:
            continue
        start = node.start_byte
        if start - buf.line_start(buf.line_of(start)) >= column:
            return path[: i + 1], node
    return path, None


def _block_opener(
    tree: Tree,
    spec: LanguageSpec,
    buf: TextBuffer,
    path: list[Node],
    anchor: int | None,
    line_start: int,
    line_suffix: str,
    at_line_start: bool,
) -> bool:
    """Whether the cursor begins a block's body (after ``def ...:``, ``if ...:``, ...)."""
    if anchor is None or not _opener_place(anchor, line_start, line_suffix, at_line_start):
        return False
    leaf = path[-1]
    header_start = buf.line_start(buf.line_of(leaf.start_byte))
    if leaf.type == "comment":
        # "if x:  # why" still opens a block: look before the comment on its line
        head = buf.data[header_start : leaf.start_byte].rstrip()
        if not head:
            return False
        path = _path_to(tree, header_start + len(head) - 1)
        leaf = path[-1]
    if leaf.type != spec.block_opener or leaf.is_named or len(path) < 2:
        return False
    parent = path[-2].type
    if not spec.block_types or parent in spec.block_types:
        return True
    if parent != _ERROR:
        return False
    # incomplete code: trust the colon only on a line that starts like a block header
    words = decode_text(buf.data[header_start : leaf.start_byte]).split(maxsplit=1)
    return bool(words) and words[0].rstrip(":") in spec.block_keywords


def _text_opener(
    data: bytearray,
    anchor: int | None,
    line_start: int,
    line_suffix: str,
    at_line_start: bool,
    spec: LanguageSpec | None,
) -> bool:
    """Text-only block opener test, for documents without a tree."""
    if anchor is None or not _opener_place(anchor, line_start, line_suffix, at_line_start):
        return False
    token = (spec.block_opener if spec is not None else ":").encode()
    return bytes(data[anchor - len(token) + 1 : anchor + 1]) == token


def _opener_place(anchor: int, line_start: int, line_suffix: str, at_line_start: bool) -> bool:
    """The anchor ends the previous line (cursor on a fresh line) or the cursor's own line."""
    if at_line_start:
        return anchor < line_start
    return line_suffix.strip() == ""


def _tail(data: bytearray, start: int, end: int, chars: int) -> str:
    """The last ``chars`` characters of ``data[start:end]``, reading at most 4*chars bytes."""
    if end <= start or chars <= 0:
        return ""
    lo = max(start, end - 4 * chars)
    if lo > start:
        lo = _next_char(data, lo)
    return decode_text(data[lo:end])[-chars:]


def _head(data: bytearray, start: int, end: int, chars: int) -> str:
    """The first ``chars`` characters of ``data[start:end]``, reading at most 4*chars bytes."""
    if end <= start or chars <= 0:
        return ""
    hi = min(end, start + 4 * chars)
    if hi < end:
        hi = char_start(data, hi)
    return decode_text(data[start:hi])[:chars]


def _next_char(data: bytearray, offset: int) -> int:
    while offset < len(data) and (data[offset] & 0xC0) == 0x80:
        offset += 1
    return offset

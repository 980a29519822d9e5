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
* **Closing tokens** (the other languages): a scope whose closing token
  (``}``, ``end``) is the anchor is closed: the cursor after it is outside.
* **Indentation** (languages with ``indent_scoped``, i.e. Python): when only
  whitespace precedes the cursor on its line, a block or scope whose header
  starts at or right of the cursor's column is closed: it becomes the node,
  and neither it nor anything inside it is an enclosing scope. So a new line
  at column 0 after a function is at module level, and the same line indented
  stays in the function's body.
* **Error recovery**: while the definition being written does not parse
  (the innermost scope is an ``ERROR`` node, or its child on the cursor's
  path holds one), the scope found may be the file or the class around it,
  and its text would reach into the definitions above. Then the line
  context leaves out the bodies of the finished definitions beside the path
  (see ``lsp_server.documents.line_context``), and the scope text is the
  line context followed by the line up to the cursor: an edit inside a
  definition above changes neither, and their headers still tell places
  apart.
* **Line context**: see ``lsp_server.documents.line_context``; what is typed on the
  cursor's line never moves where it starts.
* **Block opener**: see ``lsp_server.documents.block_opener``.
* **Windows**: ``scope_prefix`` runs from the start of the enclosing scope to
  the cursor (last ``scope_chars`` characters); ``suffix`` runs from the
  cursor for ``suffix_lines``/``suffix_chars`` but never past the end of the
  enclosing scope, so an edit outside the scope changes neither (while the
  user types on one line, the end found first holds: see
  ``lsp_server.documents.line_context.suffix_bound``); ``prefix`` may reach outside the
  scope.
* **Prompt**: ``prompt_prefix``/``prompt_suffix`` are what a miss sends
  upstream (see ``lsp_server.documents.prompt_window``); no key is built from
  them, so they and the ``prefix`` window are read only when first asked for
  (``DeferredPrompt``): a keystroke answered from the cache never reads them.
* Without a tree (no grammar, too large, binary) the context is text only:
  depth 0, node and parent ``"text"``, and the scope is the prefix window.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from tree_sitter import Node, Tree

from lsp_server.documents.block_opener import block_opener, text_block_opener
from lsp_server.documents.document import Document
from lsp_server.documents.languages import (
    DEFAULT_STRINGS,
    STRING_SYNTAX,
    LanguageSpec,
    StringSyntax,
)
from lsp_server.documents.line_context import line_context, suffix_bound
from lsp_server.documents.line_memo import LastContext
from lsp_server.documents.positions import PositionLike, ResolvedPosition, TextBuffer
from lsp_server.documents.prompt_window import DeferredPrompt
from lsp_server.documents.syntax_reads import (
    head_text,
    in_recovery,
    last_content_byte,
    node_path,
    tail_text,
)
from lsp_server.documents.windows import DEFAULT_WINDOWS, ContextWindows
from lsp_server.settings import CompletionSettings

logger = logging.getLogger(__name__)

NO_PARENT = "none"
TEXT_NODE = "text"


class SyntaxContext(NamedTuple):
    """Everything the cache key and the prompt need about one cursor position.

    A named tuple rather than a frozen dataclass: one is built per
    keystroke, and a tuple is built in one step instead of one attribute
    at a time.
    """

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
    #: scope-local text before the cursor's line: from the start of the scope
    #: enclosing the line's start (so typing on the line never changes it) to
    #: the line start, last ``scope_chars`` characters
    line_context: str
    suffix: str
    at_line_start: bool
    block_opener: bool
    parsed: bool
    #: the prefix window and what a miss sends upstream, read when first asked
    #: for (``lsp_server.documents.prompt_window``); never part of a key
    prompt: DeferredPrompt
    #: the position was out of range (or inside a character) and was clamped
    clamped: bool = False
    #: the first line of each scope enclosing the text before the cursor's line
    #: (``lsp_server.documents.line_context``): keys and anchors cover them, so
    #: identical nested scopes in different functions differ
    scope_heads: str = ""
    #: how the document's language writes strings (its spec's, an embedder's
    #: own language included): what the confidence cut's string trim reads
    strings: StringSyntax = DEFAULT_STRINGS

    @property
    def prefix(self) -> str:
        """The last ``prefix_chars`` characters before the cursor (``prefix_lines`` at most)."""
        return self.prompt.texts()[0]

    @property
    def prompt_prefix(self) -> str:
        """The prefix a miss sends upstream."""
        return self.prompt.texts()[1]

    @property
    def prompt_suffix(self) -> str:
        """The suffix a miss sends upstream."""
        return self.prompt.texts()[2]


class CursorText(NamedTuple):
    """What a context reads of the text around the cursor, with a tree or without."""

    where: ResolvedPosition
    line_start: int
    line_end: int
    line_prefix: str
    line_suffix: str
    at_line_start: bool
    #: where the prefix window may start (``prefix_lines``, 4 bytes a character)
    window_start: int
    #: where the suffix window must end (``suffix_lines``, 4 bytes a character)
    suffix_end: int
    #: the last non-whitespace byte before the cursor within the prefix window
    anchor: int | None


class ScopePath(NamedTuple):
    """The tree at the cursor: its path, its node, and the scopes enclosing it."""

    #: root to the deepest node containing the anchor (the root alone without one)
    full_path: list[Node]
    #: the depths on ``full_path`` of the nodes the language counts as scopes
    depths: list[int]
    #: ``full_path`` up to a scope the cursor is past (by indentation or closing token)
    path: list[Node]
    node: Node
    parent_type: str
    #: the depths of the enclosing scopes, the root's (0) first
    scope_depths: list[int]
    block_opener: bool


def syntax_context(
    doc: Document, position: PositionLike, windows: ContextWindows = DEFAULT_WINDOWS
) -> SyntaxContext:
    """The syntax context of ``doc`` at ``position`` (clamped; never raises on a bad one)."""
    text = cursor_text(doc, position, windows)
    tree, spec = doc.tree, doc.spec
    if tree is None or spec is None:
        return _text_context(doc, text, windows)
    data = doc.buffer.data
    found = scope_path(doc, tree, spec, text)
    full_path, scope_depths = found.full_path, found.scope_depths
    inner = scope_depths[-1]
    if inner == 0:
        scope_start, scope_end = 0, len(data)
    else:
        scope = full_path[inner]
        scope_start, scope_end = scope.start_byte, scope.end_byte
    scope_chars = windows.scope_chars
    line_start, off = text.line_start, text.where.offset
    before_line = line_context(doc, spec, full_path, found.depths, line_start, scope_chars)
    if before_line.elided and scope_start <= line_start and in_recovery(found.path, inner):
        # the scope found may be the file or class around a definition that
        # no longer parses: the text before the line is the line context's,
        # which leaves out the bodies of the definitions above it
        typed = tail_text(data, line_start, off, scope_chars)
        scope_prefix = (before_line.context + typed)[-scope_chars:]
    else:
        scope_prefix = tail_text(data, max(scope_start, off - 4 * scope_chars), off, scope_chars)
    bound = suffix_bound(doc, spec, line_start, text.line_end, scope_end)
    suffix = head_text(data, off, min(text.suffix_end, max(off, bound)), windows.suffix_chars)
    return SyntaxContext(
        language=doc.language,
        line=text.where.line,
        character=text.where.character,
        offset=off,
        scope_chain=tuple([full_path[d].type for d in scope_depths]),
        scope_depth=len(scope_depths) - 1,
        node_type=found.node.type,
        parent_type=found.parent_type,
        scope_start_byte=scope_start,
        scope_end_byte=scope_end,
        scope_prefix=scope_prefix,
        line_prefix=text.line_prefix,
        line_suffix=text.line_suffix,
        line_context=before_line.context,
        scope_heads=before_line.scope_heads,
        suffix=suffix,
        at_line_start=text.at_line_start,
        block_opener=found.block_opener,
        parsed=True,
        prompt=DeferredPrompt(doc, off, text.where.line, text.window_start, suffix, windows),
        clamped=text.where.clamped,
        strings=spec.strings,
    )


def cursor_text(doc: Document, position: PositionLike, windows: ContextWindows) -> CursorText:
    """The cursor's place, its line's text around it, and the bounds of the windows."""
    buf = doc.buffer
    data = buf.data
    where = doc.resolve(position)
    off, line = where.offset, where.line
    line_start, line_end = buf.line_start(line), buf.line_end(line)
    prefix_chars, prefix_lines = windows.prefix_chars, windows.prefix_lines
    line_prefix = tail_text(data, line_start, off, prefix_chars)
    window_start = max(buf.line_start(max(0, line - prefix_lines)), off - 4 * prefix_chars)
    last_line = min(buf.line_count - 1, line + windows.suffix_lines)
    return CursorText(
        where,
        line_start,
        line_end,
        line_prefix,
        head_text(data, off, line_end, windows.suffix_chars),
        line_prefix.strip() == "",
        window_start,
        min(buf.line_end(last_line), off + 4 * windows.suffix_chars),
        last_content_byte(data, window_start, off),
    )


def _text_context(doc: Document, text: CursorText, windows: ContextWindows) -> SyntaxContext:
    """The context without a tree: depth 0, node and parent ``"text"``, the prefix as scope."""
    data = doc.buffer.data
    off, line_start, scope_chars = text.where.offset, text.line_start, windows.scope_chars
    suffix = head_text(data, off, text.suffix_end, windows.suffix_chars)
    return SyntaxContext(
        language=doc.language,
        line=text.where.line,
        character=text.where.character,
        offset=off,
        scope_chain=(),
        scope_depth=0,
        node_type=TEXT_NODE,
        parent_type=TEXT_NODE,
        scope_start_byte=text.window_start,
        scope_end_byte=text.suffix_end,
        scope_prefix=tail_text(data, text.window_start, off, scope_chars),
        line_prefix=text.line_prefix,
        line_suffix=text.line_suffix,
        line_context=tail_text(
            data, max(0, line_start - 4 * scope_chars), line_start, scope_chars
        ),
        suffix=suffix,
        at_line_start=text.at_line_start,
        block_opener=text_block_opener(
            data, text.anchor, line_start, text.line_suffix, text.at_line_start, doc.spec
        ),
        parsed=False,
        prompt=DeferredPrompt(doc, off, text.where.line, text.window_start, suffix, windows),
        clamped=text.where.clamped,
        strings=_strings(doc),
    )


def _strings(doc: Document) -> StringSyntax:
    """The document's string syntax: its spec's, else the shipped one of its languageId."""
    if doc.spec is not None:
        return doc.spec.strings
    return STRING_SYNTAX.get(doc.language_id.lower(), DEFAULT_STRINGS)


def scope_path(doc: Document, tree: Tree, spec: LanguageSpec, text: CursorText) -> ScopePath:
    """The anchor's path in ``tree``, cut where the cursor is past a scope, and its scopes."""
    buf = doc.buffer
    anchor, line_start, at_line_start = text.anchor, text.line_start, text.at_line_start
    full_path = node_path(tree, anchor) if anchor is not None else [tree.root_node]
    depths = spec.scope_depths(full_path)
    opener = block_opener(
        tree, spec, buf, full_path, anchor, line_start, text.line_suffix, at_line_start
    )
    path, closed = full_path, None
    if spec.indent_scoped:
        if at_line_start and anchor is not None and anchor < line_start:
            path, closed = _close_by_indent(buf, spec, path, text.where.offset - line_start)
            # the block the previous line opened is closed again at this indentation
            opener = opener and closed is None
    elif anchor is not None and buf.data[anchor] in spec.closer_ends:
        path, closed = _close_by_token(spec, path, anchor)
    node, parent_type = _node_and_parent(path)
    # the cut path is the start of the full one: so are its scopes; a closed
    # scope (the path's last node) is not one
    limit = len(path) - 1 if closed else len(path)
    scope_depths = [d for d in depths if d < limit]
    if not scope_depths or scope_depths[0] != 0:
        scope_depths.insert(0, 0)
    return ScopePath(full_path, depths, path, node, parent_type, scope_depths, opener)


def completion_context(
    doc: Document, position: PositionLike, settings: CompletionSettings
) -> SyntaxContext:
    """``syntax_context`` with the windows the completion settings ask for.

    Asked again at the same cursor of the same text and tree, it answers
    the context it took then (``LineMemo.context``): any edit drops it.
    """
    windows = ContextWindows.of(settings)
    memo = doc.line_memo
    last = memo.context
    line, character = position.line, position.character
    if (
        last is not None
        and last.line == line
        and last.character == character
        and last.tree is doc.tree
        and last.windows == windows
    ):
        context: SyntaxContext = last.context
        return context
    context = syntax_context(doc, position, windows)
    memo.context = LastContext(line, character, doc.tree, windows, context)
    return context


def _node_and_parent(path: list[Node]) -> tuple[Node, str]:
    """The path's deepest named node, and the type of its nearest named non-``ERROR`` ancestor."""
    depth = len(path) - 1
    while depth > 0 and not path[depth].is_named:
        depth -= 1
    for above in range(depth - 1, -1, -1):
        n = path[above]
        if n.is_named and not n.is_error:
            return path[depth], n.type
    return path[depth], NO_PARENT


def _close_by_token(
    spec: LanguageSpec, path: list[Node], anchor: int
) -> tuple[list[Node], Node | None]:
    """Cut ``path`` at the outermost scope whose closing token is the anchor.

    The cursor is past a ``}`` or ``end`` that ends a function: it is outside
    it. A closer tree-sitter only inserted (``MISSING``, while the user types
    the body) does not close anything.
    """
    # every node on the path contains the anchor and ends no later than its
    # parent, so those that end right after the anchor are the path's last ones
    end = anchor + 1
    first = len(path)
    while first > 1 and path[first - 1].end_byte == end:
        first -= 1
    for i in range(first, len(path)):
        node = path[i]
        if not spec.is_scope(node, path[i - 1]):
            continue
        last = node
        while last.child_count:
            child = last.child(last.child_count - 1)
            if child is None:
                break
            last = child
        if not last.is_missing and last.type in spec.closers:
            return path[: i + 1], node
    return path, None


def _close_by_indent(
    buf: TextBuffer, spec: LanguageSpec, path: list[Node], column: int
) -> tuple[list[Node], Node | None]:
    """Cut ``path`` at the outermost block whose header is not left of ``column``."""
    for i, node in enumerate(path[1:], start=1):
        if node.type not in spec.block_types and not spec.is_scope(node, path[i - 1]):
            continue
        start = node.start_byte
        if start - buf.line_start(buf.line_of(start)) >= column:
            return path[: i + 1], node
    return path, None

"""Whether the cursor begins a block's body (after ``def ...:``, ``if ...:``, ...).

A block opener asks the model for several lines instead of one. The anchor
(the last non-whitespace byte before the cursor) must end the previous line
with the cursor on a fresh one, or end the cursor's own line. With a tree,
the anchor is the language's opener token inside a block node; in code that
error recovery wrapped, the token counts only on a line that starts with one
of the language's block keywords. Languages whose headers open a block by
their words (Ruby's ``def name``, Lua's ``function f(x)``) match the header
line against the spec's ``opening_pattern``. Without a tree, the opener token
itself is enough.
"""

from __future__ import annotations

from tree_sitter import Node, Tree

from lsp_server.documents.languages import LanguageSpec
from lsp_server.documents.positions import TextBuffer, decode_text
from lsp_server.documents.syntax_reads import ERROR_NODE, node_path


def block_opener(
    tree: Tree,
    spec: LanguageSpec,
    buf: TextBuffer,
    path: list[Node],
    anchor: int | None,
    line_start: int,
    line_suffix: str,
    at_line_start: bool,
) -> bool:
    """Whether the cursor begins a block's body (after ``def ...:``, ``if ... {``, ...)."""
    if anchor is None or not _opener_place(anchor, line_start, line_suffix, at_line_start):
        return False
    leaf = path[-1]
    kind = leaf.type
    # the start of the header's line, read only where it is needed
    header_start = -1
    if "comment" in kind:
        # "if x:  # why" still opens a block: look before the comment on its line
        header_start = buf.line_start(buf.line_of(leaf.start_byte))
        head = buf.data[header_start : leaf.start_byte].rstrip()
        if not head:
            return False
        path = node_path(tree, header_start + len(head) - 1)
        leaf = path[-1]
        kind = leaf.type
    if kind not in spec.block_tokens or leaf.is_named or len(path) < 2:
        # Ruby's "def name", Lua's "function f(x)": the header's words open the block
        if spec.opening_pattern is None:
            return False
        if header_start < 0:
            header_start = buf.line_start(buf.line_of(leaf.start_byte))
        return spec.header_opens(decode_text(buf.data[header_start : leaf.end_byte]))
    parent = path[-2].type
    if not spec.block_types or parent in spec.block_types:
        return True
    if parent != ERROR_NODE:
        return False
    # incomplete code: trust the colon only on a line that starts like a block header
    if header_start < 0:
        header_start = buf.line_start(buf.line_of(leaf.start_byte))
    words = decode_text(buf.data[header_start : leaf.start_byte]).split(maxsplit=1)
    return bool(words) and words[0].rstrip(":") in spec.block_keywords


def text_block_opener(
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
    tokens = spec.block_tokens if spec is not None else (":", "{")
    return any(bytes(data[anchor - len(t) + 1 : anchor + 1]) == t.encode() for t in tokens)


def _opener_place(anchor: int, line_start: int, line_suffix: str, at_line_start: bool) -> bool:
    """The anchor ends the previous line (cursor on a fresh line) or the cursor's own line."""
    if at_line_start:
        return anchor < line_start
    return line_suffix.strip() == ""

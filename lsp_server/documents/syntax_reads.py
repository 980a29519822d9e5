"""Bounded reads the syntax context is built from: text windows and one tree path.

A window reads at most four bytes per character it returns, so its cost does
not grow with the file; ``node_path`` is one root-to-leaf descent.
"""

from __future__ import annotations

from tree_sitter import Node, Tree

from lsp_server.documents.positions import char_start, decode_text

#: the type tree-sitter gives the nodes its error recovery wraps around bad code
ERROR_NODE = "ERROR"


def node_path(tree: Tree, byte: int) -> list[Node]:
    """Root and every descendant containing ``byte``, outermost first (one descent)."""
    cursor = tree.walk()
    path = [tree.root_node]
    while cursor.goto_first_child_for_byte(byte) is not None:
        node = cursor.node
        if node is None or node.start_byte > byte:
            break
        path.append(node)
    return path


def tail_text(data: bytearray, start: int, end: int, chars: int) -> str:
    """The last ``chars`` characters of ``data[start:end]``, reading at most 4*chars bytes."""
    if end <= start or chars <= 0:
        return ""
    lo = max(start, end - 4 * chars)
    if lo > start:
        lo = _next_char(data, lo)
    return decode_text(data[lo:end])[-chars:]


def head_text(data: bytearray, start: int, end: int, chars: int) -> str:
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

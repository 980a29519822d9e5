"""Bounded reads the syntax context is built from: text windows and one tree path.

A window reads at most four bytes per character it returns (and decodes
only one per character where those are ASCII), so its cost does not grow
with the file; ``node_path`` is one root-to-leaf descent.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def node_path_near(path: list[Node], byte: int) -> tuple[list[Node], int]:
    """``node_path`` of ``byte`` sharing what it can of ``path`` (another byte's path).

    Siblings never overlap, so the nodes of ``path`` that contain ``byte``
    are the first nodes of its own path too: the descent starts at the
    deepest of them instead of at the root. Returns the path and the depth
    of the last node it shares with ``path``.
    """
    depth = len(path) - 1
    while depth > 0 and not path[depth].start_byte <= byte < path[depth].end_byte:
        depth -= 1
    near = path[: depth + 1]
    cursor = near[-1].walk()
    while cursor.goto_first_child_for_byte(byte) is not None:
        node = cursor.node
        if node is None or node.start_byte > byte:
            break
        near.append(node)
    return near, depth


def in_recovery(path: list[Node], inner: int) -> bool:
    """Whether error recovery reshapes the tree below ``path[inner]`` on ``path``.

    ``path`` is a root-to-leaf path and ``path[inner]`` the innermost scope
    on it: it is an ``ERROR`` node, or its child on the path holds one.
    Then the definition being written may no longer parse as a scope, and
    the scope found around it is the file or the class.
    """
    if not path[0].has_error:  # the root has an error whenever any node does
        return False
    return path[inner].is_error or (inner + 1 < len(path) and path[inner + 1].has_error)


#: bytes looked at first by ``last_content_byte``: the anchor is nearly always close
_NEAR = 64


def last_content_byte(data: bytearray, start: int, end: int) -> int | None:
    """Offset of the last non-whitespace byte of ``data[start:end]`` (None if all blank).

    Whitespace is what ``bytes.rstrip`` strips. Looks back from ``end`` in
    growing steps, so a cursor right after code reads a few bytes, not the
    whole window.
    """
    step = _NEAR
    while end > start:
        lo = max(start, end - step)
        stripped = data[lo:end].rstrip()
        if stripped:
            return lo + len(stripped) - 1
        end, step = lo, step * 8
    return None


def tail_text(data: bytearray, start: int, end: int, chars: int) -> str:
    """The last ``chars`` characters of ``data[start:end]``, reading at most 4*chars bytes."""
    if end <= start or chars <= 0:
        return ""
    # the last ``chars`` bytes, when ASCII, are the last ``chars`` characters
    # whatever precedes them
    ascii_text = _ascii(data, max(start, end - chars), end)
    if ascii_text is not None:
        return ascii_text
    lo = max(start, end - 4 * chars)
    if lo > start:
        lo = _next_char(data, lo)
    return decode_text(data[lo:end])[-chars:]


#: what stands in for a span ``tail_text_without`` leaves out (never shown, only fingerprinted)
ELIDED = b"\0"


def tail_text_without(
    data: bytearray, start: int, end: int, chars: int, spans: Sequence[tuple[int, int]]
) -> str:
    """``tail_text`` with each of ``spans`` (sorted, disjoint byte ranges) left out.

    Each span met in the bytes read becomes one ``ELIDED`` byte; without
    one, this is ``tail_text``.
    """
    lo = max(start, end - 4 * chars)
    inside = [(s, e) for s, e in spans if s < end and e > lo]
    if not inside:
        return tail_text(data, start, end, chars)
    if lo > start:
        lo = _next_char(data, lo)
    parts: list[bytes | bytearray] = []
    for s, e in inside:
        parts.append(data[lo : max(lo, s)])
        parts.append(ELIDED)
        lo = max(lo, e)
    parts.append(data[lo:end])
    return decode_text(b"".join(parts))[-chars:]


def head_text(data: bytearray, start: int, end: int, chars: int) -> str:
    """The first ``chars`` characters of ``data[start:end]``, reading at most 4*chars bytes."""
    if end <= start or chars <= 0:
        return ""
    # the first ``chars`` bytes, when ASCII, are the first ``chars`` characters
    ascii_text = _ascii(data, start, min(end, start + chars))
    if ascii_text is not None:
        return ascii_text
    hi = min(end, start + 4 * chars)
    if hi < end:
        hi = char_start(data, hi)
    return decode_text(data[start:hi])[:chars]


def _ascii(data: bytearray, start: int, end: int) -> str | None:
    """``data[start:end]`` as text when it is all ASCII, else None.

    Decoded straight from a view of the buffer: one new string, no
    intermediate copy. A keystroke reads several windows of a few kilobytes
    between two parses, and every kilobyte it writes there is one the parse
    finds missing from the processor's caches next time.
    """
    # UTF-8 decodes ASCII as fast as the ASCII codec does, and any other byte
    # becomes a non-ASCII character instead of an exception to catch
    text = str(memoryview(data)[start:end], "utf-8", "surrogateescape")
    return text if text.isascii() else None


def _next_char(data: bytearray, offset: int) -> int:
    while offset < len(data) and (data[offset] & 0xC0) == 0x80:
        offset += 1
    return offset

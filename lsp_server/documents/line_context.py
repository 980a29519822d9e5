"""The line context: scope-local text before the cursor's line, stable while typing.

The scope enclosing the end of the text before the cursor's line (its last
non-whitespace byte) decides where ``line_context`` starts; what is typed on
the line itself never moves it. An incomplete line can make tree-sitter's
error recovery flatten the enclosing class or function into an ``ERROR``
node (``    def f(s`` inside a class does), which would move the start to the
module and change every line anchor on the line mid-word; in brace languages
the error may sit after the line (the function's ``}`` went missing) and
still reshape the scope. So each document
remembers what it found for the line it was last asked about (in its
``line_memo``, ``lsp_server.documents.line_memo``); until an edit touches
the text before the line, that is reused, so typing on the line does not
even look again. A start found on a clean tree
holds through error recovery; one found during error recovery is replaced
at the next clean parse. The context is still the text itself, so a
remembered start can only cost a hit, never serve a stale one.

Nested scopes can be byte-for-byte the same in different places (an
object getter ``get shape() { ... }`` in two functions), and the innermost
scope's text cannot tell them apart. So the line context also gives the
*scope heads*: the first line (at most ``HEAD_BYTES`` bytes) of every
scope below the root that encloses the text before the line, outermost
first, and of every ``ERROR`` node enclosing it (while a function is being
written, its missing closing brace often makes it one). The key and the
anchor cover them; an edit outside the enclosing scope changes them only
when it edits one of those header lines (a renamed parameter of the
enclosing function changes what the model writes). They come from the same
scopes as the context, so typing on the line never changes them either.

``suffix_bound`` keeps a memo the same way for where the suffix window stops, in languages
whose scopes end at a closing token: typing ``if x {`` or ``each do`` on a
line moves the end of the enclosing function (its ``}`` or ``end`` now
closes the new block) although nothing after the cursor changed. While the
cursor stays on one line and no edit touches the text around it, the end
found first is kept (as a distance from the
end of the document, which typing on the line does not move). Python's
scopes follow the line's indentation, which typing on the line does move,
so there the remembered end also requires the same indentation.
"""

from __future__ import annotations

from tree_sitter import Node

from lsp_server.documents.document import Document
from lsp_server.documents.languages import LanguageSpec
from lsp_server.documents.line_memo import LineScope, LineText, SuffixEnd
from lsp_server.documents.syntax_reads import (
    in_recovery,
    last_content_byte,
    node_path_near,
    tail_text,
    tail_text_without,
)

#: what ``scope_heads`` keeps of each enclosing scope's first line
HEAD_BYTES = 256


def line_context(
    doc: Document,
    spec: LanguageSpec,
    cursor_path: list[Node],
    cursor_scopes: list[int],
    line_start: int,
    scope_chars: int,
) -> LineText:
    """Scope-local text before the line, from the scope enclosing the line's start.

    ``cursor_path`` is the cursor's own ``node_path`` in the document's tree
    and ``cursor_scopes`` its ``LanguageSpec.scope_depths``: the path to the
    line's start shares its first nodes, and their scopes.
    """
    memos = doc.line_memo
    memo = memos.line_scope
    # an ERROR node anywhere in the tree makes the root's has_error true
    in_error = cursor_path[0].has_error
    if (
        memo is not None
        and memo.line_start == line_start
        and memo.scope_chars == scope_chars
        and (memo.clean or in_error)
    ):
        return memo.text
    data = doc.buffer.data
    window = max(0, line_start - 4 * scope_chars)
    head = last_content_byte(data, window, line_start)
    if head is None:
        text = LineText(tail_text(data, window, line_start, scope_chars), "")
        memos.line_scope = LineScope(line_start, scope_chars, text, True)
        return text
    scope_start, heads, elided = _line_scope(
        data, spec, cursor_path, cursor_scopes, head, window
    )
    context = tail_text_without(data, max(window, scope_start), line_start, scope_chars, elided)
    text = LineText(context, heads, elided)
    memos.line_scope = LineScope(line_start, scope_chars, text, not in_error)
    return text


def _line_scope(
    data: bytearray,
    spec: LanguageSpec,
    cursor_path: list[Node],
    cursor_scopes: list[int],
    byte: int,
    floor: int,
) -> tuple[int, str, tuple[tuple[int, int], ...]]:
    """Where the innermost scope around ``byte`` starts (0: the root), its heads, what to leave out.

    ``byte``'s path shares its first nodes with the cursor's path, and so
    the scopes among them (``cursor_scopes``): only the nodes below are
    tested. While error recovery reshapes the tree there (``in_recovery``),
    the definition being written may have stopped parsing as a scope, and
    the scope found is the file or the class around it, whose text reaches
    into the definitions above: an edit in one of them would change every
    key and anchor of the line. Then the bodies of the finished definitions
    beside the path (``LanguageSpec.finished_beside``, back to ``floor``,
    the start of the window the text is cut to) are left out of the text:
    their headers and everything between them stay, so places the scope
    text told apart before stay apart.
    """
    path, shared = node_path_near(cursor_path, byte)
    depths = [d for d in cursor_scopes if 0 < d <= shared]
    depths += spec.scope_depths(path, shared + 1)
    inner = depths[-1] if depths else 0
    start = path[inner].start_byte if depths else 0
    elided: tuple[tuple[int, int], ...] = ()
    if in_recovery(path, inner):
        bodies = (d.child_by_field_name("body") for d in spec.finished_beside(path, inner, floor))
        elided = tuple((b.start_byte, b.end_byte) for b in bodies if b is not None)
    if path[0].has_error:
        # The construct being written (a function without its closing brace
        # yet) is often an ERROR node, not a scope: its head tells it apart too.
        depths = sorted({*depths, *(d for d in range(1, len(path)) if path[d].is_error)})
    if not depths:
        return start, "", elided
    return start, _heads(data, [path[d] for d in depths]), elided


def _heads(data: bytearray, scopes: list[Node]) -> str:
    """The first line of each scope (at most ``HEAD_BYTES`` bytes), NUL-joined.

    The heads are only fingerprinted, never shown: a character cut at the
    limit is kept as escaped bytes rather than decoded exactly.
    """
    heads = []
    for scope in scopes:
        start = scope.start_byte
        cap = start + HEAD_BYTES
        end = data.find(b"\n", start, cap)
        heads.append(bytes(data[start : cap if end < 0 else end]))
    return b"\0".join(heads).decode("utf-8", "surrogateescape")


def suffix_bound(
    doc: Document, spec: LanguageSpec, line_start: int, line_end: int, scope_end: int
) -> int:
    """The end of the suffix window: ``scope_end``, or the one found first on this line."""
    if spec.indent_scoped:
        line = doc.buffer.data[line_start:line_end]
        indent = bytes(line[: len(line) - len(line.lstrip())])
    else:
        indent = b""
    size = len(doc.buffer)
    memos = doc.line_memo
    memo = memos.suffix_end
    if (
        memo is not None
        and memo.line_start == line_start
        and memo.line_end == line_end
        and memo.indent == indent
    ):
        return max(line_end, size - memo.from_end)
    memos.suffix_end = SuffixEnd(line_start, line_end, indent, size - scope_end)
    return scope_end

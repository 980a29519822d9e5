"""The scope probe: does an answer survive an edit of the definition above?

The design's promise (DESIGN.md, "One keystroke, as data"): an edit outside
the enclosing scope does not change the key. The probe checks it where it is
hardest, on a line the user is in the middle of writing, whose incomplete
text puts the parser in error recovery:

1. in a definition (the innermost scopes of at least three lines, in file
   order), cut a body line: what follows a cut point on that line is gone
   (``shape="line"``), or everything after the cut point to the end of the
   definition, as while the definition is being written
   (``shape="definition"``);
2. ask at the cut: the syntax context, its key and line anchor; the cut
   text is stored as the answer (``CompletionStore``, as the pipeline
   stores an upstream answer);
3. edit a line of the definition above (speculation plays no part);
4. ask again at the same place: the answer is *kept* when the store serves
   the same text (an exact or a typed-through hit).

Every pair of neighbouring definitions is probed once, with one of three
cut points (after the line's first word, half-way through its text, before
its last character) and one of two edits (a comment appended to a line,
an identifier renamed), taken in turn so each file sees every combination.
Both edits leave the definition above valid code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lsprotocol.types import Position, Range, TextDocumentContentChangePartial
from tree_sitter import Node

from cache.policies import make_policy
from cache.store import CompletionStore
from lsp_server.completion.pipeline import keys_for
from lsp_server.documents.document import Document
from lsp_server.documents.languages import LanguageSpec, default_registry
from lsp_server.documents.languages.indentation import indent_of
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import SyntaxContext, syntax_context
from lsp_server.observe.trace.format import utf16_len

SHAPES = ("line", "definition")
CUTS = ("word", "half", "end")
EDITS = ("comment", "rename")
#: the shortest body line (stripped) worth cutting
MIN_LINE = 6
_FIRST_WORD = re.compile(r"\W*\w+")


@dataclass(frozen=True)
class Probe:
    """One probe: where the line was cut, what was edited above, and whether the answer held."""

    #: the cut line (0-based) and the text left on it
    line: int
    prefix: str
    cut: str
    edit: str
    #: the edited line of the definition above (0-based)
    edited_line: int
    kept: bool
    #: what differed between the two contexts when the answer was lost
    why: str = ""


def definitions(spec: LanguageSpec, root: Node) -> list[Node]:
    """The innermost scopes of at least three lines, in file order."""
    found: list[Node] = []

    def walk(node: Node, parent: Node | None) -> None:
        if parent is not None and spec.is_scope(node, parent):
            if node.end_point.row - node.start_point.row >= 2:
                found.append(node)
        for child in node.children:
            walk(child, node)

    walk(root, None)
    return [
        node for node in found
        if not any(
            other is not node and node.start_byte <= other.start_byte
            and other.end_byte <= node.end_byte
            and (other.start_byte, other.end_byte) != (node.start_byte, node.end_byte)
            for other in found
        )
    ]


def _leaves(node: Node) -> Iterator[Node]:
    if node.child_count == 0:
        yield node
    for child in node.children:
        yield from _leaves(child)


def _body_lines(spec: LanguageSpec, lines: list[str], scope: Node) -> list[int]:
    """The lines strictly inside ``scope`` that hold code (not a comment or a lone brace)."""
    rows = []
    for row in range(scope.start_point.row + 1, scope.end_point.row):
        body = lines[row].strip()
        if len(body) >= MIN_LINE and not body.startswith(
            (spec.line_comment, "#", "/*", "*", '"', "'", "@")
        ):
            rows.append(row)
    return rows


def _cut_at(line: str, how: str) -> int | None:
    """Where ``how`` cuts ``line`` (a character index), or None when nothing would be left."""
    start, end = len(indent_of(line)), len(line.rstrip())
    if how == "word":
        match = _FIRST_WORD.match(line, start)
        cut = match.end() if match else start + 1
    elif how == "half":
        cut = start + max(1, (end - start) // 2)
    else:
        cut = end - 1
    return cut if start < cut < end else None


def _comment_line(spec: LanguageSpec, doc: Document, lines: list[str], rows: list[int]) -> int:
    """A line of ``rows`` after whose end a line comment leaves the code as it was."""
    assert doc.tree is not None
    for row in rows:
        end = len(lines[row].rstrip())
        at = doc.offset_at(Position(line=row, character=utf16_len(lines[row][:end]))) - 1
        node = doc.tree.root_node.descendant_for_byte_range(at, at + 1)
        inside = node is not None and any(
            word in ancestor.type
            for ancestor in _ancestors(node)
            for word in ("string", "comment", "heredoc", "template")
        )
        if not inside and not lines[row].rstrip().endswith("\\"):
            return row
    return rows[0]


def _ancestors(node: Node) -> Iterator[Node]:
    current: Node | None = node
    while current is not None:
        yield current
        current = current.parent


def _identifier(scope: Node) -> Node | None:
    """An identifier in ``scope``'s body (below its first line), the middle one."""
    found = [
        leaf for leaf in _leaves(scope)
        if leaf.type.endswith("identifier")
        and leaf.start_point.row == leaf.end_point.row > scope.start_point.row
    ]
    return found[len(found) // 2] if found else None


def _difference(before: SyntaxContext, after: SyntaxContext) -> str:
    parts = [
        name for name in (
            "scope_depth", "node_type", "parent_type", "scope_prefix", "suffix",
            "line_context", "scope_heads",
        )
        if getattr(before, name) != getattr(after, name)
    ]
    chain = "/".join(before.scope_chain)
    return f"{', '.join(parts) or 'nothing'} differ (scopes {chain})"


class _Session:
    """One copy of the open document to probe, edited as an editor's changes edit it."""

    def __init__(self, base: Document) -> None:
        # a fork parses the probe's edits incrementally from the open
        # document's tree, as the server parses an editor's changes
        self.doc = base.fork()

    def replace(self, start: Position, end: Position, text: str) -> None:
        change = TextDocumentContentChangePartial(range=Range(start=start, end=end), text=text)
        self.doc.apply_changes([change])

    def context(self, line: int, character: int) -> SyntaxContext:
        return syntax_context(self.doc, Position(line=line, character=character))


def probe_file(path: Path, shape: str = "line", *, limit: int | None = None) -> list[Probe]:
    """Probe every pair of neighbouring definitions of ``path`` (``limit``: evenly spread)."""
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {SHAPES}, not {shape!r}")
    spec = default_registry().for_uri(path.name)
    if spec is None:
        raise ValueError(f"no grammar for {path.name}")
    text = path.read_text(encoding="utf-8")
    base = DocumentStore().open(path.resolve().as_uri(), spec.name, 1, text)
    assert base.tree is not None
    lines = text.split("\n")
    defs = definitions(spec, base.tree.root_node)
    pairs = [
        (above, scope) for above, scope in zip(defs, defs[1:], strict=False)
        if above.end_byte <= scope.start_byte
        and _body_lines(spec, lines, above) and _body_lines(spec, lines, scope)
    ]
    if limit is not None and len(pairs) > limit:
        step = len(pairs) / limit
        pairs = [pairs[int(i * step + step / 2)] for i in range(limit)]
    probes = []
    for i, (above, scope) in enumerate(pairs):
        probe = _probe(spec, lines, base, above, scope, shape, CUTS[i % 3], EDITS[i % 2])
        if probe is not None:
            probes.append(probe)
    return probes


def _probe(
    spec: LanguageSpec,
    lines: list[str],
    base: Document,
    above: Node,
    scope: Node,
    shape: str,
    cut_how: str,
    edit: str,
) -> Probe | None:
    rows = _body_lines(spec, lines, scope)
    row = rows[len(rows) // 2]
    line = lines[row]
    cut = _cut_at(line, cut_how) or _cut_at(line, "half")
    if cut is None:
        return None
    if edit == "comment":
        edited = _comment_line(spec, base, lines, _body_lines(spec, lines, above))
        at = len(lines[edited].rstrip())
        insert = f" {spec.line_comment} note"
    else:
        name = _identifier(above)
        if name is None:
            return None
        edited = name.end_point.row
        at = len(lines[edited].encode()[: name.end_point.column].decode())
        insert = "_x"
    session = _Session(base)
    column = utf16_len(line[:cut])
    end = (
        Position(line=row, character=utf16_len(line)) if shape == "line"
        else base.position_at(scope.end_byte)
    )
    session.replace(Position(line=row, character=column), end, "")
    before = session.context(row, column)
    key, anchor = keys_for(before)
    answers = CompletionStore(make_policy("hybrid", 16))
    answers.put(key, anchor, before.line_prefix, line[cut:], context=before.line_context)
    where = Position(line=edited, character=utf16_len(lines[edited][:at]))
    session.replace(where, where, insert)
    after = session.context(row, column)
    key, anchor = keys_for(after)
    hit = answers.lookup(key, anchor, after.line_prefix)
    kept = hit is not None and hit.text == line[cut:]
    return Probe(
        line=row,
        prefix=line[:cut],
        cut=cut_how,
        edit=edit,
        edited_line=edited,
        kept=kept,
        why="" if kept else _difference(before, after),
    )

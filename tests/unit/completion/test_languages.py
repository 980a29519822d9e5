"""Every registered language keeps Python's guarantees, checked against its own sample.

Each spec in ``lsp_server.documents.languages.SPECS`` must have a sample file in
``lsp_server/samples`` (found by extension). The tests below find what they
need in the parsed sample - two definitions of the same type and depth, the
lines that open and close blocks - so a new language is covered by adding
its module, its registry line and a sample; nothing here names a language.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pytest
import tree_sitter
from lsprotocol.types import Position, Range, TextDocumentContentChangePartial
from tree_sitter import Node

from cache.policies import make_policy
from cache.store import CompletionStore
from lsp_server.completion.pipeline import keys_for
from lsp_server.documents.document import Document
from lsp_server.documents.languages import SPECS, LanguageSpec, default_registry
from lsp_server.documents.languages.indentation import indent_of, indent_unit, next_line_indent
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import SyntaxContext, syntax_context
from lsp_server.observe.trace.format import utf16_len

SAMPLES = Path(str(resources.files("lsp_server") / "samples"))
IDS = [spec.name for spec in SPECS]


def sample_for(spec: LanguageSpec) -> Path:
    registry = default_registry()
    found = sorted(p for p in SAMPLES.iterdir() if registry.for_uri(p.name) is spec)
    assert found, f"no sample in {SAMPLES} for {spec.name} ({spec.extensions})"
    return found[0]


@dataclass
class Sample:
    spec: LanguageSpec
    store: DocumentStore
    doc: Document
    uri: str

    @property
    def lines(self) -> list[str]:
        return self.doc.text.split("\n")

    def edit(self, line: int, character: int, text: str) -> None:
        at = Position(line=line, character=character)
        change = TextDocumentContentChangePartial(range=Range(start=at, end=at), text=text)
        self.store.change(self.uri, self.doc.version + 1, [change])

    def delete(self, start: Position, end: Position) -> None:
        change = TextDocumentContentChangePartial(range=Range(start=start, end=end), text="")
        self.store.change(self.uri, self.doc.version + 1, [change])

    def context(self, line: int, character: int | None = None) -> SyntaxContext:
        col = utf16_len(self.doc.line_text(line)) if character is None else character
        return syntax_context(self.doc, Position(line=line, character=col))


def open_sample(spec: LanguageSpec) -> Sample:
    path = sample_for(spec)
    store = DocumentStore()
    uri = path.resolve().as_uri()
    doc = store.open(uri, spec.name, 1, path.read_text(encoding="utf-8"))
    return Sample(spec, store, doc, uri)


def definitions(sample: Sample) -> list[tuple[Node, int]]:
    """Every scope below the root spanning at least three lines, with its scope depth."""
    assert sample.doc.tree is not None
    found: list[tuple[Node, int]] = []

    def walk(node: Node, parent: Node | None, depth: int) -> None:
        scope = parent is not None and sample.spec.is_scope(node, parent)
        if scope and node.end_point.row - node.start_point.row >= 2:
            found.append((node, depth + 1))
        for child in node.children:
            walk(child, node, depth + 1 if scope else depth)

    walk(sample.doc.tree.root_node, None, 0)
    return found


def first_body_line(sample: Sample, scope: Node) -> int:
    """The first line inside ``scope`` after its header that holds a statement."""
    lines = sample.lines
    for row in range(scope.start_point.row + 1, scope.end_point.row):
        body = lines[row].strip()
        if body and body not in ("{", "}") and not body.startswith(
            (sample.spec.line_comment, '"', "'", "@")
        ):
            return row
    raise AssertionError(f"no body line in {scope}")


def same_shape_pair(sample: Sample) -> tuple[Node, Node]:
    """Two innermost definitions of one node type at one depth (two functions alike)."""
    found = definitions(sample)
    leaves = [
        (node, depth)
        for node, depth in found
        if not any(o != node and node.start_byte <= o.start_byte < node.end_byte for o, _ in found)
    ]
    by_shape: dict[tuple[str, int], list[Node]] = {}
    for node, depth in leaves:
        by_shape.setdefault((node.type, depth), []).append(node)
    pairs = [nodes[-2:] for nodes in by_shape.values() if len(nodes) >= 2]
    assert pairs, f"the {sample.spec.name} sample needs two definitions of the same shape"
    first, second = min(pairs, key=lambda p: p[0].start_byte)
    return first, second


@pytest.fixture(params=SPECS, ids=IDS)
def sample(request: pytest.FixtureRequest) -> Sample:
    return open_sample(request.param)


def test_every_registered_language_has_a_sample_that_parses_cleanly(sample: Sample) -> None:
    tree = sample.doc.tree
    assert tree is not None, sample.doc.parse_skipped
    assert tree.root_node.type == sample.spec.root_type
    assert not tree.root_node.has_error, f"{sample.uri} does not parse cleanly"


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_grammar_abi_is_one_the_installed_tree_sitter_loads(spec: LanguageSpec) -> None:
    abi = spec.language.abi_version
    assert tree_sitter.MIN_COMPATIBLE_LANGUAGE_VERSION <= abi <= tree_sitter.LANGUAGE_VERSION


def test_languages_are_found_by_language_id_filetype_and_extension() -> None:
    registry = default_registry()
    for spec in SPECS:
        for language_id in spec.language_ids:
            assert registry.for_language_id(language_id) is spec, language_id
        for ext in spec.extensions:
            assert registry.for_uri(f"file:///x/a.{ext}") is spec, ext
    assert registry.for_language_id("typescriptreact") is registry.for_uri("a.tsx")
    assert registry.for_language_id("markdown") is None
    assert registry.language_id_for("notes.txt") == "plaintext"


def test_inside_a_definition_the_context_is_its_scope(sample: Sample) -> None:
    first, _ = same_shape_pair(sample)
    row = first_body_line(sample, first)
    ctx = sample.context(row)
    assert ctx.parsed and ctx.scope_depth >= 1
    assert ctx.scope_start_byte == first.start_byte
    assert ctx.scope_end_byte == first.end_byte


def test_edit_outside_the_enclosing_scope_keeps_the_key_and_anchor(sample: Sample) -> None:
    _, scope = same_shape_pair(sample)
    row = first_body_line(sample, scope)
    before = keys_for(sample.context(row))
    comment = f"{sample.spec.line_comment} a note\n"
    after_row = scope.end_point.row + 1
    sample.edit(after_row, 0, comment)
    sample.edit(scope.start_point.row, 0, comment)
    assert keys_for(sample.context(row + 1)) == before


def test_edit_inside_the_enclosing_scope_changes_the_key(sample: Sample) -> None:
    _, scope = same_shape_pair(sample)
    row = first_body_line(sample, scope)
    key, _ = keys_for(sample.context(row))
    indent = indent_of(sample.doc.line_text(row))
    sample.edit(row, 0, f"{indent}{sample.spec.line_comment} a note\n")
    assert keys_for(sample.context(row + 1))[0] != key


def test_two_definitions_of_the_same_shape_never_share_a_key(sample: Sample) -> None:
    first, second = same_shape_pair(sample)
    a = keys_for(sample.context(first_body_line(sample, first)))
    b = keys_for(sample.context(first_body_line(sample, second)))
    assert a[0] != b[0] and a[1] != b[1]


def test_typing_a_line_keeps_its_anchor_and_serves_the_rest_typed_through(
    sample: Sample,
) -> None:
    _, scope = same_shape_pair(sample)
    row = first_body_line(sample, scope)
    line = sample.doc.line_text(row)
    indent = indent_of(line)
    sample.delete(
        Position(line=row, character=utf16_len(indent)),
        Position(line=row, character=utf16_len(line)),
    )
    ctx = sample.context(row)
    key, anchor = keys_for(ctx)
    store = CompletionStore(make_policy("hybrid", 64))
    store.put(key, anchor, ctx.line_prefix, line[len(indent) :], context=ctx.line_context)
    for n in range(len(indent) + 1, len(line)):
        sample.edit(row, utf16_len(line[: n - 1]), line[n - 1])
        typed = sample.context(row)
        key, typed_anchor = keys_for(typed)
        assert typed_anchor == anchor, f"anchor moved after typing {line[:n]!r}"
        hit = store.lookup(key, typed_anchor, typed.line_prefix)
        assert hit is not None and hit.source == "typed", line[:n]
        assert hit.text == line[n:]


def block_lines(sample: Sample) -> list[tuple[int, str]]:
    """Lines of the sample followed by a non-blank line that is not a block's end."""
    lines = sample.lines
    out = []
    for row, line in enumerate(lines[:-1]):
        nxt = lines[row + 1].strip()
        ender = nxt.startswith(sample.spec.closers) if sample.spec.closers else False
        if line.strip() and nxt and not ender and not nxt.startswith(("else", "elif", "when")):
            out.append((row, line))
    return out


def test_speculation_predicts_the_indent_after_a_block_opener(sample: Sample) -> None:
    spec, lines = sample.spec, sample.lines
    unit = indent_unit(lines, spec.indent)
    openers = [(row, line) for row, line in block_lines(sample) if spec.opens_block(line.strip())]
    assert openers, f"the {spec.name} sample opens no block"
    for row, line in openers:
        assert next_line_indent(line, spec, unit) == indent_of(lines[row + 1]), line


def test_speculation_predicts_the_indent_after_a_closing_line(sample: Sample) -> None:
    spec, lines = sample.spec, sample.lines
    unit = indent_unit(lines, spec.indent)

    def closing(body: str) -> bool:
        return body in spec.closers or spec.ends_block(body)

    closers = [(row, line) for row, line in block_lines(sample) if closing(line.strip())]
    assert closers, f"the {spec.name} sample closes no block before a statement"
    exact = 0
    for row, line in closers:
        predicted, actual = next_line_indent(line, spec, unit), indent_of(lines[row + 1])
        # an editor steps out one level; the user may step out further by hand
        assert actual == predicted or predicted.startswith(actual), line
        exact += actual == predicted
    assert exact, f"no closing line of the {spec.name} sample is followed at its predicted indent"


def test_a_fresh_line_after_a_block_opener_asks_for_a_block(sample: Sample) -> None:
    first, _ = same_shape_pair(sample)
    lines = sample.lines
    row = next(
        r for r in range(first.start_point.row, first.end_point.row)
        if lines[r].rstrip().endswith(sample.spec.block_tokens)
        or sample.spec.header_opens(lines[r])
    )
    indent = next_line_indent(lines[row], sample.spec, indent_unit(lines, sample.spec.indent))
    sample.edit(row + 1, 0, indent + "\n")
    ctx = sample.context(row + 1, len(indent))
    assert ctx.at_line_start and ctx.block_opener


def test_a_fresh_line_after_a_closed_definition_is_outside_it(sample: Sample) -> None:
    first, second = same_shape_pair(sample)
    end_row = first.end_point.row
    sample.edit(end_row + 1, 0, "\n")
    inside = sample.context(first_body_line(sample, first))
    ctx = sample.context(end_row + 1, 0)
    assert ctx.scope_depth < inside.scope_depth
    assert ctx.scope_start_byte != first.start_byte


def test_an_unfinished_definition_still_gets_a_sane_context(sample: Sample) -> None:
    _, scope = same_shape_pair(sample)
    row = first_body_line(sample, scope)
    line = sample.doc.line_text(row)
    cut = len(indent_of(line)) + max(1, len(line.strip()) // 2)
    # the user is half-way through the line, and the definition has no end yet
    end = sample.doc.position_at(scope.end_byte)
    sample.delete(Position(line=row, character=utf16_len(line[:cut])), end)
    assert sample.doc.tree is not None
    ctx = sample.context(row)
    assert ctx.parsed
    assert ctx.line_prefix == line[:cut]
    assert ctx.parent_type != "ERROR"
    assert ctx.scope_prefix.endswith(line[:cut])
    assert sample.doc.text_range(ctx.scope_start_byte, ctx.offset).endswith(line[:cut])
    # typing on keeps the line's anchor while error recovery reshapes the tree
    _, anchor = keys_for(ctx)
    sample.edit(row, utf16_len(line[:cut]), line[cut : cut + 2])
    assert keys_for(sample.context(row))[1] == anchor


def test_the_editors_language_lists_are_generated_from_the_registry() -> None:
    import importlib.util

    script = Path(__file__).parents[3] / "editors" / "vscode" / "scripts" / "editor_languages.py"
    loader = importlib.util.spec_from_file_location("editor_languages", script)
    assert loader is not None and loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    assert module.main(["--check"]) == 0
    ids = module.vscode_ids()
    assert {"typescriptreact", "javascriptreact", "cpp", "csharp", "shellscript"} <= set(ids)
    assert {spec.name for spec in SPECS} <= set(ids)
    assert {"go", "cs", "sh", "typescriptreact"} <= set(module.neovim_filetypes())


def test_no_grammar_is_imported_until_a_document_of_its_language_opens() -> None:
    import subprocess
    import sys

    probe = (
        "import sys; import lsp_server.server.language_server; "
        "from lsp_server.documents.store import DocumentStore; s = DocumentStore(); "
        "s.open('file:///a.go', 'go', 1, 'package a'); "
        "print(sorted({m.split('.')[0] for m in sys.modules if m.startswith('tree_sitter_')}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip() == "['tree_sitter_go']"


def test_a_missing_grammar_names_the_extra_and_the_file_is_served_as_text() -> None:
    from lsp_server.documents.languages.spec import GrammarMissingError

    spec = LanguageSpec(
        name="klingon",
        grammar_module="tree_sitter_klingon_not_installed",
        scope_types=frozenset({"program"}),
        extra="languages",
        extensions=("tlh",),
    )
    with pytest.raises(GrammarMissingError, match=r"scopecache\[languages\]"):
        spec.new_parser()
    doc = Document("file:///x.tlh", "klingon", 1, "qapla'\n", spec=spec)
    assert doc.tree is None and doc.parse_skipped == "grammar not installed"
    ctx = syntax_context(doc, Position(line=0, character=3))
    assert not ctx.parsed and ctx.language == "klingon"

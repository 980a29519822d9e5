"""The confidence cut's string trim on the serving path reads the document's language."""

from __future__ import annotations

import dataclasses

from lsprotocol import types

from lsp_server.documents.languages import LanguageRegistry
from lsp_server.documents.languages.rust import RUST
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import SyntaxContext, syntax_context
from tests.unit.completion.test_confidence_pipeline import ScoredBackend, pipeline


def context(uri: str, language: str, text: str) -> SyntaxContext:
    doc = DocumentStore().open(uri, language, 1, text)
    lines = text.split("\n")
    return syntax_context(doc, types.Position(line=len(lines) - 1, character=len(lines[-1])))


async def shown(tokens: list[tuple[str, float]], uri: str, language: str, text: str) -> str:
    pipe = pipeline(ScoredBackend(tokens), min_probability=0.5, min_onward_probability=0.5)
    answer = await pipe.complete(uri, context(uri, language, text), still_current=lambda: True)
    return "" if answer is None else answer.text


async def test_a_rust_lifetime_in_the_sure_part_is_shown_whole() -> None:
    tokens = [("parse<'a>(input: &str)", 0.99), (" -> ", 0.99), ("Option", 0.2), ("<&'a str>", 0.9)]
    assert await shown(tokens, "file:///p/lib.rs", "rust", "pub fn ") == (
        "parse<'a>(input: &str) -> "
    )


async def test_a_javascript_template_literal_cut_inside_is_trimmed() -> None:
    tokens = [("const msg = `Hello ", 0.99), ("${name}", 0.2), ("`;", 0.9)]
    text = "function greet(name) {\n  "
    assert await shown(tokens, "file:///p/app.js", "javascript", text) == "const msg ="


async def test_an_embedders_own_language_is_trimmed_by_its_specs_string_syntax() -> None:
    # A language registered by a plugin author, not shipped: Rust's grammar and
    # strings under another name. Its lifetime is no string opener either.
    rustish = dataclasses.replace(
        RUST, name="rustish", aliases=(), vscode_ids=(), filetypes=(), extensions=(".rsh",)
    )
    registry = LanguageRegistry([rustish])
    doc = DocumentStore(languages=registry).open("file:///p/lib.rsh", "rustish", 1, "pub fn ")
    ctx = syntax_context(doc, types.Position(line=0, character=7))
    tokens = [("parse<'a>(input: &str)", 0.99), (" -> ", 0.99), ("Option", 0.2), ("<&'a str>", 0.9)]
    pipe = pipeline(ScoredBackend(tokens), min_probability=0.5, min_onward_probability=0.5)
    answer = await pipe.complete("file:///p/lib.rsh", ctx, still_current=lambda: True)
    assert answer is not None and answer.text == "parse<'a>(input: &str) -> "
    assert ctx.strings is RUST.strings

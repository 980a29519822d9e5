"""Rust: functions, impl and trait blocks, modules, types, and closures bound by ``let``."""

from __future__ import annotations

from lsp_server.documents.languages.spec import LanguageSpec
from lsp_server.documents.languages.strings import StringForm, StringSyntax

#: ``"`` after b or c, raw strings (r, br, cr, fenced with ``#``s, no
#: escapes); ``'`` is a char literal only when it closes one character (or
#: one escape) later, else a lifetime (``&'a str``) or a label (``'outer:``);
#: ``name: "`` in struct literals
RUST_STRINGS = StringSyntax(
    forms=(
        StringForm('"', frozenset({"", "b", "c"})),
        StringForm('"', frozenset({"r", "br", "cr"}), escapes=False, hashes=True),
        StringForm("'", frozenset({"", "b"}), char_only=True),
    ),
    comments=(("//", ""), ("/*", "*/")),
    prefix_chars="#",
    separators=("=", ":"),
)

RUST = LanguageSpec(
    name="rust",
    grammar_module="tree_sitter_rust",
    grammar_package="tree-sitter-rust",
    scope_types=frozenset(
        {"source_file", "function_item", "impl_item", "trait_item", "mod_item", "struct_item",
         "enum_item", "union_item", "macro_definition"}
    ),
    named_scope_types={"closure_expression": frozenset({"let_declaration"})},
    aliases=("rs",),
    filetypes=("rust",),
    extensions=("rs",),
    root_type="source_file",
    strings=RUST_STRINGS,
)

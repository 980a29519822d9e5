"""Rust: functions, impl and trait blocks, modules, types, and closures bound by ``let``."""

from __future__ import annotations

from lsp_server.documents.languages.spec import LanguageSpec

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
)

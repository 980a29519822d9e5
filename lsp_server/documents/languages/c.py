"""C: function definitions, and structs, unions and enums that have a body."""

from __future__ import annotations

from lsp_server.documents.languages.spec import LanguageSpec

C_BODIED = frozenset({"struct_specifier", "union_specifier", "enum_specifier"})

C = LanguageSpec(
    name="c",
    grammar_module="tree_sitter_c",
    grammar_package="tree-sitter-c",
    scope_types=frozenset({"translation_unit", "function_definition"}) | C_BODIED,
    bodied_types=C_BODIED,
    filetypes=("c",),
    extensions=("c", "h"),
    root_type="translation_unit",
)

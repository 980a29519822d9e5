"""C: function definitions, and structs, unions and enums that have a body."""

from __future__ import annotations

from lsp_server.documents.languages.spec import LanguageSpec
from lsp_server.documents.languages.strings import StringSyntax, plain_forms

C_BODIED = frozenset({"struct_specifier", "union_specifier", "enum_specifier"})

#: ``"`` and ``'`` after an encoding prefix (L, u, U, u8; case matters)
C_STRINGS = StringSyntax(
    forms=plain_forms("\"'", ("", "L", "u", "U", "u8")),
    comments=(("//", ""), ("/*", "*/")),
)

C = LanguageSpec(
    name="c",
    grammar_module="tree_sitter_c",
    grammar_package="tree-sitter-c",
    scope_types=frozenset({"translation_unit", "function_definition"}) | C_BODIED,
    bodied_types=C_BODIED,
    filetypes=("c",),
    extensions=("c", "h"),
    root_type="translation_unit",
    strings=C_STRINGS,
)

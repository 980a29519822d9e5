"""Go: functions, methods, type declarations and function literals assigned to names."""

from __future__ import annotations

from lsp_server.documents.languages.imports import GO_IMPORTS
from lsp_server.documents.languages.spec import LanguageSpec
from lsp_server.documents.languages.strings import StringForm, StringSyntax

#: ``"``, rune literals in ``'``, raw strings in backticks (no escapes);
#: ``Name: "`` in composite literals
GO_STRINGS = StringSyntax(
    forms=(StringForm('"'), StringForm("'"), StringForm("`", escapes=False)),
    comments=(("//", ""), ("/*", "*/")),
    separators=("=", ":"),
)

GO = LanguageSpec(
    imports=GO_IMPORTS,
    name="go",
    grammar_module="tree_sitter_go",
    grammar_package="tree-sitter-go",
    scope_types=frozenset(
        {"source_file", "function_declaration", "method_declaration", "type_declaration"}
    ),
    named_scope_types={"func_literal": frozenset({"expression_list"})},
    indent="\t",
    aliases=("golang",),
    filetypes=("go",),
    extensions=("go",),
    root_type="source_file",
    strings=GO_STRINGS,
)

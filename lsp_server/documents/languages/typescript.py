"""TypeScript and TSX (two grammars of one package).

JavaScript's scopes plus interfaces, abstract classes and namespaces.
"""

from __future__ import annotations

from lsp_server.documents.languages.imports import JS_IMPORTS
from lsp_server.documents.languages.javascript import JS_NAMED_SCOPES, JS_SCOPES, JS_STRINGS
from lsp_server.documents.languages.spec import LanguageSpec

TS_SCOPES = JS_SCOPES | {
    "interface_declaration", "abstract_class_declaration", "internal_module", "module",
}

TYPESCRIPT = LanguageSpec(
    imports=JS_IMPORTS,
    name="typescript",
    grammar_module="tree_sitter_typescript",
    grammar_function="language_typescript",
    grammar_package="tree-sitter-typescript",
    scope_types=TS_SCOPES,
    named_scope_types=JS_NAMED_SCOPES,
    indent="  ",
    aliases=("ts",),
    filetypes=("typescript",),
    strings=JS_STRINGS,
    extensions=("ts", "mts", "cts"),
)

TSX = LanguageSpec(
    imports=JS_IMPORTS,
    name="typescriptreact",
    grammar_module="tree_sitter_typescript",
    grammar_function="language_tsx",
    grammar_package="tree-sitter-typescript",
    scope_types=TS_SCOPES,
    named_scope_types=JS_NAMED_SCOPES,
    indent="  ",
    aliases=("tsx",),
    filetypes=("typescriptreact",),
    strings=JS_STRINGS,
    extensions=("tsx",),
)

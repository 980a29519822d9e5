"""JavaScript (and JSX): functions, classes, methods, object methods, named arrow functions."""

from __future__ import annotations

from lsp_server.documents.languages.imports import JS_IMPORTS
from lsp_server.documents.languages.spec import LanguageSpec
from lsp_server.documents.languages.strings import StringForm, StringSyntax

#: parents under which a function *expression* is a named definition
ASSIGNED = frozenset(
    {"variable_declarator", "assignment_expression", "pair", "field_definition",
     "public_field_definition"}
)

JS_SCOPES = frozenset(
    {"program", "function_declaration", "generator_function_declaration", "class_declaration",
     "method_definition"}
)
JS_NAMED_SCOPES = {
    "arrow_function": ASSIGNED,
    "function_expression": ASSIGNED,
    "generator_function": ASSIGNED,
    "class": ASSIGNED,
}

#: ``"``, ``'`` and template literals (a tag may stand before the backtick);
#: ``name: "`` in object literals and ``name="`` in JSX attributes
JS_STRINGS = StringSyntax(
    forms=(StringForm('"'), StringForm("'"), StringForm("`", any_word=True)),
    comments=(("//", ""), ("/*", "*/")),
    prefix_chars="$",
    separators=("=", ":"),
)

JAVASCRIPT = LanguageSpec(
    imports=JS_IMPORTS,
    name="javascript",
    grammar_module="tree_sitter_javascript",
    grammar_package="tree-sitter-javascript",
    scope_types=JS_SCOPES,
    named_scope_types=JS_NAMED_SCOPES,
    indent="  ",
    vscode_ids=("javascriptreact",),
    aliases=("js", "jsx"),
    filetypes=("javascript", "javascriptreact"),
    extensions=("js", "jsx", "mjs", "cjs"),
    strings=JS_STRINGS,
)

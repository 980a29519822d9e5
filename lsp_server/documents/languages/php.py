"""PHP (the ``languages`` extra): namespaces, classes, interfaces, traits, enums, functions."""

from __future__ import annotations

from lsp_server.documents.languages.spec import LanguageSpec
from lsp_server.documents.languages.strings import StringForm, StringSyntax

_PREFIXES = frozenset({"", "b", "B"})

#: ``"``, ``'`` (after a legacy ``b``) and backtick commands; ``//`` and
#: ``/* */`` comments (not ``#``: it also starts ``#[`` attributes);
#: ``name: "`` named arguments, ``$name="``
PHP_STRINGS = StringSyntax(
    forms=(StringForm('"', _PREFIXES), StringForm("'", _PREFIXES), StringForm("`")),
    comments=(("//", ""), ("/*", "*/")),
    separators=("=", ":"),
    keyword_chars="$",
)

PHP = LanguageSpec(
    name="php",
    grammar_module="tree_sitter_php",
    grammar_function="language_php",
    grammar_package="tree-sitter-php",
    extra="languages",
    scope_types=frozenset(
        {"program", "namespace_definition", "class_declaration", "interface_declaration",
         "trait_declaration", "enum_declaration", "function_definition", "method_declaration"}
    ),
    filetypes=("php",),
    extensions=("php", "phtml"),
    strings=PHP_STRINGS,
)

"""PHP (the ``languages`` extra): namespaces, classes, interfaces, traits, enums, functions."""

from __future__ import annotations

from lsp_server.documents.languages.spec import LanguageSpec

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
)

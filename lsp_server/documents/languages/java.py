"""Java: classes, interfaces, enums, records, methods, constructors, named lambdas."""

from __future__ import annotations

from lsp_server.documents.languages.spec import LanguageSpec
from lsp_server.documents.languages.strings import StringForm, StringSyntax

#: ``"`` (three for a text block) and char literals in ``'``
JAVA_STRINGS = StringSyntax(
    forms=(StringForm('"', triple=True), StringForm("'")),
    comments=(("//", ""), ("/*", "*/")),
)

JAVA = LanguageSpec(
    name="java",
    grammar_module="tree_sitter_java",
    grammar_package="tree-sitter-java",
    scope_types=frozenset(
        {"program", "class_declaration", "interface_declaration", "enum_declaration",
         "record_declaration", "annotation_type_declaration", "method_declaration",
         "constructor_declaration", "compact_constructor_declaration"}
    ),
    named_scope_types={"lambda_expression": frozenset({"variable_declarator"})},
    filetypes=("java",),
    extensions=("java",),
    strings=JAVA_STRINGS,
)

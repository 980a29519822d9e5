"""C# (the ``languages`` extra): types, namespaces, methods, constructors, local functions."""

from __future__ import annotations

from lsp_server.documents.languages.spec import LanguageSpec
from lsp_server.documents.languages.strings import StringForm, StringSyntax

#: ``"`` and ``$"`` (three or more quotes: a raw string, no escapes),
#: verbatim ``@"``, ``$@"``, ``@$"`` (no escapes, ``""`` is a quote), char
#: literals in ``'``; ``name: "`` named arguments
CSHARP_STRINGS = StringSyntax(
    forms=(
        StringForm('"', frozenset({"", "$", "$$", "$$$"}), triple_raw=True),
        StringForm('"', frozenset({"@", "$@", "@$"}), escapes=False, doubled=True),
        StringForm("'"),
    ),
    comments=(("//", ""), ("/*", "*/")),
    prefix_chars="@$",
    separators=("=", ":"),
)

CSHARP = LanguageSpec(
    name="csharp",
    grammar_module="tree_sitter_c_sharp",
    grammar_package="tree-sitter-c-sharp",
    extra="languages",
    scope_types=frozenset(
        {"compilation_unit", "namespace_declaration", "file_scoped_namespace_declaration",
         "class_declaration", "struct_declaration", "interface_declaration",
         "record_declaration", "enum_declaration", "method_declaration",
         "constructor_declaration", "local_function_statement"}
    ),
    aliases=("c#",),
    filetypes=("cs",),
    extensions=("cs", "csx"),
    root_type="compilation_unit",
    strings=CSHARP_STRINGS,
)

"""C++: functions, classes and structs with a body, namespaces, templates' bodies, lambdas."""

from __future__ import annotations

from lsp_server.documents.languages.c import C_BODIED, C_STRINGS
from lsp_server.documents.languages.spec import LanguageSpec
from lsp_server.documents.languages.strings import StringForm, StringSyntax

CPP_BODIED = C_BODIED | {"class_specifier"}

_RAW = frozenset({"R", "LR", "uR", "UR", "u8R"})

#: C's, plus raw strings ``R"delim(...)delim"``; a ``'`` after a digit is a
#: digit separator (``1'000``), which opens nothing
CPP_STRINGS = StringSyntax(
    forms=(*C_STRINGS.forms, StringForm('"', _RAW, escapes=False, delimited=True)),
    comments=C_STRINGS.comments,
)

CPP = LanguageSpec(
    name="cpp",
    grammar_module="tree_sitter_cpp",
    grammar_package="tree-sitter-cpp",
    scope_types=frozenset({"translation_unit", "function_definition", "namespace_definition"})
    | CPP_BODIED,
    bodied_types=CPP_BODIED,
    named_scope_types={"lambda_expression": frozenset({"init_declarator"})},
    aliases=("c++",),
    filetypes=("cpp",),
    extensions=("cpp", "cc", "cxx", "c++", "hpp", "hh", "hxx", "h++", "ipp"),
    root_type="translation_unit",
    strings=CPP_STRINGS,
)

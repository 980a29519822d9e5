"""Python: scopes are ``def`` and ``class``; blocks open with ``:``; scopes end by indentation.

``async def`` is the same node type; a decorated function's scope is its
``function_definition``, not the ``decorated_definition`` wrapper, so
decorators stay outside it. Block statements (``if``/``for``/``with``/...)
and ``lambda`` are deliberately not scopes: the cache key fingerprints the
scope text before the cursor, and a loop body alone is too little context.
"""

from __future__ import annotations

from lsp_server.documents.languages.imports import PYTHON_IMPORTS
from lsp_server.documents.languages.spec import LanguageSpec
from lsp_server.documents.languages.strings import StringForm, StringSyntax, any_case

_PREFIXES = any_case("", "f", "b", "r", "u", "rb", "br", "fr", "rf", "t", "tr", "rt")

#: ``"`` and ``'`` after any case of f, b, r, u, t and their pairs, three of
#: them for a long string; ``#`` comments; ``help="`` keyword arguments
PYTHON_STRINGS = StringSyntax(
    forms=(StringForm('"', _PREFIXES, triple=True), StringForm("'", _PREFIXES, triple=True)),
    comments=(("#", ""),),
)

PYTHON = LanguageSpec(
    imports=PYTHON_IMPORTS,
    name="python",
    grammar_module="tree_sitter_python",
    grammar_package="tree-sitter-python",
    scope_types=frozenset({"module", "class_definition", "function_definition"}),
    block_types=frozenset(
        {
            "class_definition", "function_definition", "if_statement", "elif_clause",
            "else_clause", "for_statement", "while_statement", "with_statement",
            "try_statement", "except_clause", "finally_clause", "match_statement", "case_clause",
        }
    ),
    block_tokens=(":",),
    block_keywords=frozenset(
        "def class if elif else for while with try except finally match case async".split()
    ),
    closers=(),
    dedent_after=r"(return|pass|raise|break|continue)\b",
    indent_after=(":", "(", "[", "{"),
    indent="    ",
    indent_scoped=True,
    aliases=("py", "python3"),
    filetypes=("python",),
    extensions=("py", "pyi", "pyw"),
    line_comment="#",
    root_type="module",
    strings=PYTHON_STRINGS,
)

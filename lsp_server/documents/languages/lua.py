"""Lua (the ``languages`` extra).

Scopes are functions (named, or assigned to a name or a table field);
blocks open with ``function``, ``then``, ``do``, ``repeat`` and end with
``end``.
"""

from __future__ import annotations

from lsp_server.documents.languages.spec import LanguageSpec
from lsp_server.documents.languages.strings import StringForm, StringSyntax

#: ``"``, ``'`` and long brackets ``[[...]]``, ``[==[...]==]`` (no escapes);
#: each may follow a name as its call's only argument (``require"x"``,
#: trimmed with the name); ``--`` comments
LUA_STRINGS = StringSyntax(
    forms=(
        StringForm('"', any_word=True),
        StringForm("'", any_word=True),
        StringForm("[", escapes=False, any_word=True, brackets=True),
    ),
    comments=(("--", ""),),
)

LUA = LanguageSpec(
    name="lua",
    grammar_module="tree_sitter_lua",
    grammar_package="tree-sitter-lua",
    extra="languages",
    scope_types=frozenset({"chunk", "function_declaration"}),
    named_scope_types={"function_definition": frozenset({"expression_list", "field"})},
    block_tokens=("then", "do", "{"),
    opening_pattern=r"(^|[\s=(,])function\b[^()]*\([^()]*\)$|^(repeat|else)$",
    closers=("end", "}"),
    indent_after=("{", "(", "then", "do"),
    indent="  ",
    filetypes=("lua",),
    extensions=("lua",),
    line_comment="--",
    root_type="chunk",
    strings=LUA_STRINGS,
)

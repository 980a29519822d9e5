"""Shell scripts (the ``languages`` extra).

Scopes are functions; blocks open with ``then``, ``do`` and ``{`` and end
with ``fi``, ``done``, ``esac`` and ``}``.
"""

from __future__ import annotations

from lsp_server.documents.languages.spec import LanguageSpec

BASH = LanguageSpec(
    name="shellscript",
    grammar_module="tree_sitter_bash",
    grammar_package="tree-sitter-bash",
    extra="languages",
    scope_types=frozenset({"program", "function_definition"}),
    block_tokens=("then", "do", "{", "else"),
    opening_pattern=r"^case\b.*\bin$|^else$",
    closers=("}", "fi", "done", "esac"),
    indent_after=("{", "(", "then", "do"),
    indent="  ",
    aliases=("bash", "sh", "zsh"),
    filetypes=("sh", "bash", "zsh"),
    extensions=("sh", "bash", "zsh"),
    line_comment="#",
)

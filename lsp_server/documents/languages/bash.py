"""Shell scripts (the ``languages`` extra).

Scopes are functions; blocks open with ``then``, ``do`` and ``{`` and end
with ``fi``, ``done``, ``esac`` and ``}``.
"""

from __future__ import annotations

from lsp_server.documents.languages.spec import LanguageSpec
from lsp_server.documents.languages.strings import StringForm, StringSyntax

#: a quote anywhere in a word opens: ``'`` without escapes, ``$'`` (ANSI-C)
#: and ``"`` with them, backtick commands; ``\'`` outside quotes is a
#: literal quote; ``#`` comments only where a word starts (not ``$#``);
#: ``VAR="`` and ``--name="``
BASH_STRINGS = StringSyntax(
    forms=(
        StringForm("'", frozenset({"$"}), any_word=True),
        StringForm("'", escapes=False, any_word=True),
        StringForm('"', any_word=True),
        StringForm("`", any_word=True),
    ),
    comments=(("#", ""),),
    comment_at_word_start=True,
    prefix_chars="$",
    keyword_chars="-",
)

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
    strings=BASH_STRINGS,
)

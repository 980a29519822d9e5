"""Ruby (the ``languages`` extra).

Scopes are modules, classes and methods; blocks open with a header word
(``def``, ``if``, ...) or ``do`` and end with ``end``.
"""

from __future__ import annotations

from lsp_server.documents.languages.spec import LanguageSpec
from lsp_server.documents.languages.strings import StringForm, StringSyntax

#: ``"``, ``'`` and backtick commands; ``#`` comments; ``name: "`` keyword arguments
RUBY_STRINGS = StringSyntax(
    forms=(StringForm('"'), StringForm("'"), StringForm("`")),
    comments=(("#", ""),),
    separators=("=", ":"),
)

RUBY = LanguageSpec(
    name="ruby",
    grammar_module="tree_sitter_ruby",
    grammar_package="tree-sitter-ruby",
    extra="languages",
    scope_types=frozenset({"program", "module", "class", "singleton_class", "method",
                           "singleton_method"}),
    block_tokens=("do", "{"),
    opening_pattern=(
        r"^(def|class|module|if|unless|while|until|case|begin|else|elsif|when|in|rescue|ensure"
        r"|for)\b|(^|\s)do(\s*\|[^|]*\|)?$|\{(\s*\|[^|]*\|)?$"
    ),
    closers=("end", "}"),
    indent_after=("(", "[", "{"),
    indent="  ",
    aliases=("rb",),
    filetypes=("ruby",),
    extensions=("rb", "rake", "gemspec"),
    line_comment="#",
    strings=RUBY_STRINGS,
)

"""The grammars the server parses with, and what a scope is in each.

A ``LanguageRegistry`` maps LSP ``languageId``s and file extensions to a
``LanguageSpec``: the tree-sitter ``Language``, the node types that count as
scopes, and how a block is opened. Documents and the syntax context only ask
the registry; adding a grammar means registering one more spec, never
touching a handler.

Python scopes are the *definitions*: ``module``, ``class_definition`` and
``function_definition`` (``async def`` is the same node type; a decorated
function's scope is its ``function_definition``, not the
``decorated_definition`` wrapper, so decorators stay outside it). Block
statements (``if``/``for``/``while``/``with``/``try``/``match``) and
``lambda`` are deliberately not scopes: the cache key fingerprints the scope
text before the cursor, and a loop body alone is too little context - two
loops in different functions look alike but continue differently. The
blocks still show in the node and parent types.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePosixPath
from urllib.parse import unquote, urlparse

from tree_sitter import Language, Parser

logger = logging.getLogger(__name__)

PYTHON_SCOPES = frozenset({"module", "class_definition", "function_definition"})
PYTHON_BLOCKS = frozenset(
    {
        "class_definition",
        "function_definition",
        "if_statement",
        "elif_clause",
        "else_clause",
        "for_statement",
        "while_statement",
        "with_statement",
        "try_statement",
        "except_clause",
        "finally_clause",
        "match_statement",
        "case_clause",
    }
)


def _load_python() -> object:
    import tree_sitter_python

    return tree_sitter_python.language()


@dataclass(frozen=True, eq=False)
class LanguageSpec:
    """One grammar and the facts about it the syntax context needs."""

    #: the canonical LSP languageId, also the ``language`` of contexts and keys
    name: str
    #: returns the grammar's ``TSLanguage`` capsule; called once, on first use
    loader: Callable[[], object]
    scope_types: frozenset[str]
    #: statement node types whose header line opens an indented/braced block
    block_types: frozenset[str] = frozenset()
    #: text a block-opening line ends with (``:`` in Python, ``{`` in C-likes)
    block_opener: str = ":"
    #: first words of a block header, to judge an opener inside an ``ERROR`` node
    block_keywords: frozenset[str] = frozenset()
    #: scopes end where indentation drops (Python), not at a closing token
    indent_scoped: bool = False
    aliases: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    #: the root node type (always a scope)
    root_type: str = field(default="module")

    @cached_property
    def language(self) -> Language:
        """The tree-sitter language, loaded on first use."""
        return Language(self.loader())

    def new_parser(self) -> Parser:
        """A parser for this language (parsers are not shared between documents)."""
        return Parser(self.language)


class LanguageRegistry:
    """LSP languageIds and file extensions -> ``LanguageSpec``."""

    def __init__(self, specs: Iterable[LanguageSpec] = ()) -> None:
        self._by_id: dict[str, LanguageSpec] = {}
        self._by_ext: dict[str, LanguageSpec] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: LanguageSpec) -> None:
        """Add (or replace) a grammar under its name, aliases and extensions."""
        for language_id in (spec.name, *spec.aliases):
            self._by_id[language_id.lower()] = spec
        for ext in spec.extensions:
            self._by_ext[ext.lower().lstrip(".")] = spec

    def for_language_id(self, language_id: str) -> LanguageSpec | None:
        """The spec for an LSP languageId, or None when no grammar is registered."""
        return self._by_id.get(language_id.lower())

    def for_uri(self, uri: str) -> LanguageSpec | None:
        """The spec for a document by its file extension, or None."""
        path = unquote(urlparse(uri).path) if "://" in uri else uri
        ext = PurePosixPath(path).suffix.lower().lstrip(".")
        return self._by_ext.get(ext) if ext else None

    def resolve(self, language_id: str, uri: str) -> LanguageSpec | None:
        """The languageId's spec, falling back to the URI's extension."""
        return self.for_language_id(language_id) or self.for_uri(uri)

    def __contains__(self, language_id: object) -> bool:
        return isinstance(language_id, str) and language_id.lower() in self._by_id

    def __repr__(self) -> str:
        names = sorted({spec.name for spec in self._by_id.values()})
        return f"LanguageRegistry({names})"


PYTHON = LanguageSpec(
    name="python",
    loader=_load_python,
    scope_types=PYTHON_SCOPES,
    block_types=PYTHON_BLOCKS,
    block_opener=":",
    block_keywords=frozenset(
        "def class if elif else for while with try except finally match case async".split()
    ),
    indent_scoped=True,
    aliases=("py", "python3"),
    extensions=("py", "pyi", "pyw"),
)


def default_registry() -> LanguageRegistry:
    """The grammars shipped with scopecache (Python)."""
    return LanguageRegistry([PYTHON])

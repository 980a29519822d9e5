"""The grammars the server parses with: one module per language, one registry list.

A ``LanguageRegistry`` maps LSP ``languageId``s (VS Code's identifiers and
Neovim's filetypes) and file extensions to a ``LanguageSpec``
(``lsp_server.documents.languages.spec``). Documents and the syntax context only ask
the registry; a language without a spec gets the text-only context.

Adding a language: write ``lsp_server/documents/languages/<name>.py`` holding one
``LanguageSpec`` and add it to ``SPECS`` below. The generic tests
(``tests/unit/completion/test_languages.py``) run every registered spec against its
sample in ``lsp_server/samples`` and pick the new one up.

Grammars load lazily: no grammar package is imported until a document of
its language is opened. The core grammars are dependencies of the package;
``GrammarMissingError`` names the extra (``languages``) that installs the
others.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from pathlib import PurePosixPath
from urllib.parse import unquote, urlparse

from lsp_server.documents.languages.bash import BASH
from lsp_server.documents.languages.c import C
from lsp_server.documents.languages.cpp import CPP
from lsp_server.documents.languages.csharp import CSHARP
from lsp_server.documents.languages.go import GO
from lsp_server.documents.languages.java import JAVA
from lsp_server.documents.languages.javascript import JAVASCRIPT
from lsp_server.documents.languages.lua import LUA
from lsp_server.documents.languages.php import PHP
from lsp_server.documents.languages.python import PYTHON
from lsp_server.documents.languages.ruby import RUBY
from lsp_server.documents.languages.rust import RUST
from lsp_server.documents.languages.spec import GrammarMissingError, LanguageSpec
from lsp_server.documents.languages.strings import DEFAULT_STRINGS, StringSyntax
from lsp_server.documents.languages.typescript import TSX, TYPESCRIPT

__all__ = [
    "CORE_LANGUAGES",
    "DEFAULT_STRINGS",
    "PYTHON",
    "SPECS",
    "STRING_SYNTAX",
    "GrammarMissingError",
    "LanguageRegistry",
    "LanguageSpec",
    "StringSyntax",
    "default_registry",
]

logger = logging.getLogger(__name__)

#: every language scopecache ships a spec for (the registry list)
SPECS: tuple[LanguageSpec, ...] = (
    PYTHON,
    JAVASCRIPT,
    TYPESCRIPT,
    TSX,
    GO,
    RUST,
    JAVA,
    C,
    CPP,
    CSHARP,
    RUBY,
    PHP,
    BASH,
    LUA,
)

#: the languages whose grammars are core dependencies
CORE_LANGUAGES: tuple[str, ...] = tuple(s.name for s in SPECS if s.extra is None)

#: each languageId (lower case) -> its spec's ``StringSyntax``: the gate reads
#: it on every keystroke, so it is one dict lookup (unknown: ``DEFAULT_STRINGS``)
STRING_SYNTAX: Mapping[str, StringSyntax] = {
    language_id.lower(): spec.strings for spec in SPECS for language_id in spec.language_ids
}


class LanguageRegistry:
    """LSP languageIds and file extensions -> ``LanguageSpec``."""

    def __init__(self, specs: Iterable[LanguageSpec] = ()) -> None:
        self._by_id: dict[str, LanguageSpec] = {}
        self._by_ext: dict[str, LanguageSpec] = {}
        self._specs: dict[str, LanguageSpec] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: LanguageSpec) -> None:
        """Add (or replace) a grammar under its languageIds and extensions."""
        self._specs[spec.name] = spec
        for language_id in spec.language_ids:
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

    def language_id_for(self, path: str) -> str:
        """The languageId a client would send for a file (``plaintext`` when unknown)."""
        spec = self.for_uri(path)
        return spec.name if spec is not None else "plaintext"

    def __contains__(self, language_id: object) -> bool:
        return isinstance(language_id, str) and language_id.lower() in self._by_id

    def __iter__(self) -> Iterator[LanguageSpec]:
        return iter(list(self._specs.values()))

    def __repr__(self) -> str:
        return f"LanguageRegistry({sorted(self._specs)})"


def default_registry() -> LanguageRegistry:
    """The grammars shipped with scopecache (every spec in ``SPECS``)."""
    return LanguageRegistry(SPECS)

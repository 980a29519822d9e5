"""``LanguageSpec``: one grammar and what a scope, a block and an indent are in it.

A spec is plain data plus a loader; nothing is imported or loaded until a
document of that language is opened (``LanguageSpec.language`` calls the
loader once). The facts it holds:

* **Scopes** (``scope_types``): the definitions whose text the cache key
  fingerprints - functions, methods, classes, impl/trait blocks, namespaces,
  modules. ``named_scope_types`` adds node types that are scopes only under
  a given parent: a JavaScript arrow function is a scope when it is assigned
  to a name (``const f = () => ...``), not when it is a callback.
  ``bodied_types`` are scopes only when they have a ``body`` (a C++ ``struct
  S { ... }``, not the ``struct S`` of a parameter type).
* **Blocks**: ``block_tokens`` are the tokens whose place at the end of a
  line opens a block (``:`` in Python, ``{`` in C-likes, ``do``/``then``);
  ``block_types`` the statements they must belong to (empty: any);
  ``opening_pattern`` the header lines that open a block without a token
  (Ruby's ``def name``, Lua's ``function f(x)``).
* **Ends**: ``closers`` are the tokens that end a block (``}``, ``end``); a
  scope that ends with one at the cursor is closed. ``dedent_after`` is the
  statement after which the next line steps out (Python's ``return``).
* **Indentation**: ``indent_after`` (line endings after which the next line
  is indented one step), ``indent`` (the step when the document does not
  show one; see ``lsp_server.documents.languages.indentation``).
* **Imports** (``imports``): how the language's files import each other
  (``lsp_server.documents.languages.imports``), for cross-file context;
  None where it is not known.
* **Strings** (``strings``): how string literals open and end, comments,
  and what joins a keyword to its string
  (``lsp_server.documents.languages.strings``), for the confidence gate's
  string trim.
* **Names**: the canonical LSP ``languageId`` (``name``, VS Code's), VS
  Code's other ids (``vscode_ids``), other ids (``aliases``), Neovim
  ``filetypes``, file ``extensions`` and the
  ``line_comment`` token.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from tree_sitter import Language, Node, Parser

from lsp_server.documents.languages.imports import ImportRules
from lsp_server.documents.languages.strings import DEFAULT_STRINGS, StringSyntax

logger = logging.getLogger(__name__)


class GrammarMissingError(ImportError):
    """The grammar's package is not installed (an optional extra)."""


@dataclass(frozen=True, eq=False)
class LanguageSpec:
    """One grammar and the facts about it the syntax context needs."""

    #: the canonical LSP languageId, also the ``language`` of contexts and keys
    name: str
    #: the importable grammar module and its function returning the ``TSLanguage``
    grammar_module: str
    scope_types: frozenset[str]
    grammar_function: str = "language"
    #: the distribution that ships the grammar, for the "not installed" message
    grammar_package: str = ""
    #: the scopecache extra that installs it (None: a core dependency)
    extra: str | None = None
    #: node type -> parent types under which it is a scope
    named_scope_types: Mapping[str, frozenset[str]] = field(default_factory=dict)
    #: scope types that count only with a ``body`` field
    bodied_types: frozenset[str] = frozenset()
    #: statement node types whose header line opens an indented/braced block
    block_types: frozenset[str] = frozenset()
    #: tokens that open a block when they end a line (``:``, ``{``, ``do``)
    block_tokens: tuple[str, ...] = ("{",)
    #: first words of a block header, to judge an opener inside an ``ERROR`` node
    block_keywords: frozenset[str] = frozenset()
    #: header lines (stripped) that open a block without a token (Ruby ``def f``)
    opening_pattern: str | None = None
    #: tokens that end a block (``}``, ``end``)
    closers: tuple[str, ...] = ("}",)
    #: a stripped line matching this ends its block: the next line steps out
    dedent_after: str | None = None
    #: line endings after which the next line is indented one step
    indent_after: tuple[str, ...] = ("{", "(", "[")
    #: the indentation step when the document shows none
    indent: str = "    "
    #: scopes end where indentation drops (Python), not at a closing token
    indent_scoped: bool = False
    aliases: tuple[str, ...] = ()
    #: VS Code languageIds besides ``name`` (``javascriptreact``)
    vscode_ids: tuple[str, ...] = ()
    #: Neovim filetypes (also accepted as languageIds: Neovim sends the filetype)
    filetypes: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    line_comment: str = "//"
    #: the root node type (always a scope)
    root_type: str = "program"
    #: how files of this language import each other (None: not known)
    imports: ImportRules | None = None
    #: how string literals open and end (quotes, prefixes, comments, separators)
    strings: StringSyntax = DEFAULT_STRINGS

    def __repr__(self) -> str:
        return f"LanguageSpec({self.name!r})"

    @property
    def language_ids(self) -> tuple[str, ...]:
        """Every LSP languageId this spec answers to (name, aliases, filetypes)."""
        ids = (self.name, *self.vscode_ids, *self.aliases, *self.filetypes)
        return tuple(dict.fromkeys(ids))

    @cached_property
    def language(self) -> Language:
        """The tree-sitter language, imported and loaded on first use.

        Raises ``GrammarMissingError`` (naming the extra to install) when the
        grammar's package is missing.
        """
        try:
            module = importlib.import_module(self.grammar_module)
        except ImportError as exc:
            raise GrammarMissingError(self.missing_message()) from exc
        return Language(getattr(module, self.grammar_function)())

    def missing_message(self) -> str:
        """What to install to get this grammar."""
        package = self.grammar_package or self.grammar_module.replace("_", "-")
        if self.extra:
            return (
                f"the {self.name} grammar ({package}) is not installed; "
                f"install the '{self.extra}' extra: pip install 'scopecache[{self.extra}]'"
            )
        return f"the {self.name} grammar ({package}) is not installed: pip install {package}"

    def new_parser(self) -> Parser:
        """A parser for this language (parsers are not shared between documents)."""
        return Parser(self.language)

    # -- scopes ----------------------------------------------------------------

    @cached_property
    def _scope_kinds(self) -> _ScopeKinds:
        return _ScopeKinds.of(self)

    def is_scope(self, node: Node, parent: Node | None) -> bool:
        """Whether ``node`` (whose parent is ``parent``) is a scope."""
        kinds = self._scope_kinds
        kind = node.kind_id
        if kind in kinds.scopes:
            return kind not in kinds.bodied or node.child_by_field_name("body") is not None
        parents = kinds.named.get(kind)
        return parents is not None and parent is not None and parent.kind_id in parents

    def scopes_on(self, path: Sequence[Node]) -> list[Node]:
        """The scopes among ``path`` (a root-to-leaf path), outermost first."""
        return [path[i] for i in self.scope_depths(path)]

    def scope_depths(self, path: Sequence[Node], start: int = 0) -> list[int]:
        """Where the scopes are among ``path[start:]`` (indexes into ``path``), outermost first.

        ``path`` is a root-to-leaf path. The same test as ``is_scope``, with
        each node's kind read once (this runs on every keystroke).
        """
        kinds = self._scope_kinds
        scope_kinds, bodied, named = kinds.scopes, kinds.bodied, kinds.named
        depths: list[int] = []
        parent = path[start - 1].kind_id if start > 0 else -1
        for depth in range(start, len(path)):
            node = path[depth]
            kind = node.kind_id
            if kind in scope_kinds:
                if kind not in bodied or node.child_by_field_name("body") is not None:
                    depths.append(depth)
            elif parent >= 0:
                parents = named.get(kind)
                if parents is not None and parent in parents:
                    depths.append(depth)
            parent = kind
        return depths

    def finished_beside(self, path: Sequence[Node], below: int, floor: int) -> list[Node]:
        """The finished definitions beside ``path`` under ``path[below]``, in text order.

        ``path`` is a root-to-leaf path; the definitions looked for are the
        earlier siblings of its nodes deeper than ``below`` that end after
        ``floor`` (so the walk is bounded by the text it may skip). A
        sibling counts when it is a finished scope (``_finished``) or wraps
        one as its last part (``export function``, a decorated ``def``, a
        C++ ``template``, ``const f = () => ...``): the scope is returned.
        Siblings of different levels never overlap, and a deeper level's
        come later in the text.
        """
        found: list[Node] = []
        for depth in range(below + 1, len(path)):
            parent, node = path[depth - 1], path[depth]
            # forward from the floor: a node finds its previous sibling by
            # walking its parent's children from the first
            cursor = parent.walk()
            if cursor.goto_first_child_for_byte(floor) is None:
                continue
            while True:
                sibling = cursor.node
                if sibling is None or sibling.start_byte >= node.start_byte:
                    break
                if sibling.is_named:
                    scope = self._scope_in(sibling, parent)
                    if scope is not None:
                        found.append(scope)
                if not cursor.goto_next_sibling():
                    break
        return found

    def _scope_in(self, node: Node, parent: Node) -> Node | None:
        """``node`` if it is a finished scope, or one that is its last named part (two levels)."""
        kinds = self._scope_kinds
        for _ in range(WRAPPER_DEPTH + 1):
            kind = node.kind_id
            if kind in kinds.scopes:
                if kind in kinds.bodied and node.child_by_field_name("body") is None:
                    return None
                return node if self._finished(node) else None
            if parent.kind_id in kinds.named.get(kind, ()):
                return node if self._finished(node) else None
            count = node.named_child_count
            last = node.named_child(count - 1) if count else None
            if last is None:
                return None
            node, parent = last, node
        return None

    def _finished(self, scope: Node) -> bool:
        """Whether ``scope`` is a whole definition, not the head of the one being written.

        Error recovery can parse the head of the definition being written
        (``func f() *T`` before its ``{``) as a scope of its own: only a
        scope that ends with its own closing token (not one tree-sitter
        inserted) is finished; in a language without closing tokens, one
        without errors.
        """
        if not self.closers:
            return not scope.has_error
        last = scope
        while last.child_count:
            child = last.child(last.child_count - 1)
            if child is None:
                break
            last = child
        return not last.is_missing and last.type in self.closers

    @cached_property
    def closer_ends(self) -> frozenset[int]:
        """The last byte of each closing token: only a cursor after one can close a scope."""
        return frozenset(token.encode()[-1] for token in self.closers)

    # -- lines -------------------------------------------------------------------

    @cached_property
    def _indent_after(self) -> re.Pattern[str]:
        parts = [
            (r"(?<![\w$])" if t[0].isalnum() else "") + re.escape(t) for t in self.indent_after
        ]
        return re.compile("(?:" + "|".join(parts) + r")$")

    @cached_property
    def _opening(self) -> re.Pattern[str] | None:
        return re.compile(self.opening_pattern) if self.opening_pattern else None

    @cached_property
    def _dedent(self) -> re.Pattern[str] | None:
        return re.compile(self.dedent_after) if self.dedent_after else None

    @cached_property
    def _closed(self) -> re.Pattern[str]:
        words = [(r"(?<![\w$])" if t[0].isalnum() else "") + re.escape(t) for t in self.closers]
        return re.compile("(?:" + "|".join(words) + r")$") if words else re.compile(r"(?!)")

    def opens_block(self, body: str) -> bool:
        """Whether a line (stripped) indents the next one: an opener ends it or heads it."""
        if not body:
            return False
        if self.indent_after and self._indent_after.search(body):
            return True
        opening = self._opening
        return opening is not None and bool(opening.search(body)) and not self._closed.search(body)

    def ends_block(self, body: str) -> bool:
        """Whether a line (stripped) is a statement after which the next line steps out."""
        dedent = self._dedent
        return dedent is not None and bool(dedent.match(body))

    def header_opens(self, header: str) -> bool:
        """Whether a header line opens a block by its words alone (no token)."""
        opening = self._opening
        body = header.strip()
        return (
            opening is not None and bool(opening.search(body)) and not self._closed.search(body)
        )


#: how deep ``LanguageSpec.finished_beside`` looks into a wrapper for its definition
WRAPPER_DEPTH = 2

#: the kinds tree-sitter gives every grammar: ``ERROR`` and its repetition
_BUILTIN_KINDS = (0xFFFE, 0xFFFF)


@dataclass(frozen=True)
class _ScopeKinds:
    """A spec's scope node types as the grammar's kind ids (``Node.kind_id``).

    Comparing small ints is cheaper than reading ``Node.type`` (a new
    string each time) and hashing it. A type name may belong to several
    ids (a named rule and an anonymous token, say); every id whose name is
    listed counts, so ``node.kind_id in scopes`` is ``node.type in
    scope_types`` exactly.
    """

    scopes: frozenset[int]
    bodied: frozenset[int]
    #: node kind -> parent kinds under which it is a scope
    named: Mapping[int, frozenset[int]]

    @classmethod
    def of(cls, spec: LanguageSpec) -> _ScopeKinds:
        language = spec.language
        ids: dict[str, set[int]] = {}
        for kind in (*range(language.node_kind_count), *_BUILTIN_KINDS):
            name = language.node_kind_for_id(kind)
            if name is not None:
                ids.setdefault(name, set()).add(kind)

        def kinds_of(names: Iterable[str]) -> frozenset[int]:
            return frozenset(k for name in names for k in ids.get(name, ()))

        named = {
            kind: kinds_of(parents)
            for name, parents in spec.named_scope_types.items()
            for kind in ids.get(name, ())
        }
        return cls(kinds_of(spec.scope_types), kinds_of(spec.bodied_types), named)

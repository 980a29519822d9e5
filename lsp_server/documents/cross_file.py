"""Cross-file context: which other files' text a miss sends, and in what order.

``CrossFileContext.chunks_for(doc)`` picks, within ``context.maxChars``:

1. the definitions of the names the document imports, when the file that
   defines them is open (Python, JavaScript/TypeScript and Go, by the rules
   of ``lsp_server.documents.languages.imports``);
2. a chunk of every other open document, most recently edited first: the
   lines around its last edit (the block of ``CHUNK_LINES`` lines containing
   it, so that further edits nearby keep the same block), or its first lines
   when it was not edited here.

A chunk larger than what is left of the budget is cut rather than left out:
a region to the largest aligned block (half, a quarter ... of
``CHUNK_LINES`` lines) around the edit that fits, a definition to its first
lines that fit. Both cuts depend only on the other document's text and the
budget, so they too stay the same while the user types.

Never from a document matched by ``exclude``, never a chunk that looks like
it holds a credential (``lsp_server.documents.exclude.looks_secret``), never a chunk of
the document being completed.

The order is append-mostly, so that a server keeps the chunks in its KV cache
from one request to the next: a chunk keeps the place it got when it was
first sent; a chunk whose text changed, or that is new, goes to the end.
Between two keystrokes in the same document nothing changes, and the chunks
go out byte-identical.

The cache key does not include this context: an answer cached before another
file changed may still be served.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from lsp_server.documents.document import Document
from lsp_server.documents.exclude import is_excluded, looks_secret, uri_path
from lsp_server.documents.positions import decode_text
from lsp_server.documents.store import DocumentStore
from lsp_server.settings import Settings
from transport.backend import ContextChunk

logger = logging.getLogger(__name__)

#: lines in the chunk taken from another document
CHUNK_LINES = 32
#: lines kept of one imported definition
DEFINITION_LINES = 40
#: most documents considered per request (the most recently touched)
MAX_DOCUMENTS = 16

@dataclass(frozen=True, slots=True)
class _Candidate:
    #: what the chunk is, stable across edits: (uri, "definition" | "region", detail)
    ident: tuple[str, str, str]
    chunk: ContextChunk
    #: the same chunk cut to at most this many characters of budget (None: none fits)
    fit: Callable[[int], _Candidate | None] | None = None

    @property
    def cost(self) -> int:
        """The budget the chunk takes: its text and its file name."""
        return len(self.chunk.text) + len(self.chunk.filename) + 1


class CrossFileContext:
    """Chooses other documents' chunks for a request and keeps their order stable."""

    def __init__(
        self,
        documents: DocumentStore,
        settings: Callable[[], Settings],
        *,
        root: Callable[[], str | None] = lambda: None,
    ) -> None:
        self._documents = documents
        self._settings = settings
        self._root = root
        self._ticks = itertools.count(1)
        #: uri -> (when last opened or edited, last edited line or None)
        self._touched: dict[str, tuple[int, int | None]] = {}
        #: chunk ident -> (place in the order, text it was sent with)
        self._order: dict[tuple[str, str, str], tuple[int, str]] = {}
        self._places = itertools.count(1)

    # -- what the user did ------------------------------------------------

    def note_open(self, uri: str) -> None:
        """A document was opened: it becomes the most recently touched."""
        line = self._touched.get(uri, (0, None))[1]
        self._touched[uri] = (next(self._ticks), line)

    def note_edit(self, uri: str, line: int) -> None:
        """A document was edited at ``line``."""
        self._touched[uri] = (next(self._ticks), line)

    def forget(self, uri: str) -> None:
        """A document was closed: none of its text is sent any more."""
        self._touched.pop(uri, None)
        for ident in [i for i in self._order if i[0] == uri]:
            del self._order[ident]

    # -- what is sent -----------------------------------------------------

    def filename(self, uri: str) -> str:
        """The path a model is shown for ``uri``: relative to the workspace when inside it."""
        path = uri_path(uri)
        root = self._root()
        if root:
            root_path = uri_path(root).rstrip("/") + "/"
            if path.startswith(root_path):
                return path[len(root_path) :]
        return PurePosixPath(path).name or path

    def repo_name(self) -> str:
        """The workspace folder's name ("" when the client named no workspace)."""
        root = self._root()
        return PurePosixPath(uri_path(root)).name if root else ""

    def chunks_for(self, doc: Document) -> tuple[ContextChunk, ...]:
        """The chunks to send with a request in ``doc``, in their stable order."""
        settings = self._settings()
        budget = settings.context.max_chars
        if not settings.context.cross_file or budget <= 0:
            return ()
        chosen: list[_Candidate] = []
        seen: set[tuple[str, str, str]] = set()
        for candidate in self._candidates(doc, settings.exclude):
            if candidate.ident in seen:
                continue
            if candidate.cost > budget:
                cut = candidate.fit(budget) if candidate.fit is not None else None
                if cut is None or cut.cost > budget or cut.ident in seen:
                    continue
                candidate = cut
            cost = candidate.cost
            if looks_secret(candidate.chunk.text):
                logger.debug("chunk of %s left out: looks like a credential", candidate.ident[0])
                continue
            seen.add(candidate.ident)
            chosen.append(candidate)
            budget -= cost
        placed = []
        for candidate in chosen:
            known = self._order.get(candidate.ident)
            if known is None or known[1] != candidate.chunk.text:
                known = (next(self._places), candidate.chunk.text)
                self._order[candidate.ident] = known
            placed.append((known[0], candidate.chunk))
        return tuple(chunk for _, chunk in sorted(placed, key=lambda p: p[0]))

    def _candidates(self, doc: Document, exclude: list[str]) -> Iterator[_Candidate]:
        others = [
            d
            for d in self._documents
            if d.uri != doc.uri and not is_excluded(d.uri, exclude)
        ]
        yield from self._imported_definitions(doc, others)
        recent = sorted(others, key=lambda d: self._touched.get(d.uri, (0, None))[0], reverse=True)
        for other in recent[:MAX_DOCUMENTS]:
            region = self._region(other)
            if region is not None:
                yield region

    def _region(self, doc: Document, lines: int = CHUNK_LINES) -> _Candidate | None:
        """The block of ``lines`` lines around ``doc``'s last edit (a multiple of ``lines``)."""
        buf = doc.buffer
        edited = self._touched.get(doc.uri, (0, None))[1]
        first = 0
        if edited is not None:
            first = min(edited, buf.line_count - 1) // lines * lines
        last = min(buf.line_count - 1, first + lines - 1)
        text = decode_text(buf.data[buf.line_start(first) : buf.line_end(last)])
        if not text.strip():
            return None
        ident = (doc.uri, "region", str(first) if lines == CHUNK_LINES else f"{first}/{lines}")
        return _Candidate(
            ident,
            ContextChunk(self.filename(doc.uri), text + "\n"),
            fit=None if lines == 1 else lambda budget: self._region_within(doc, lines // 2, budget),
        )

    def _region_within(self, doc: Document, lines: int, budget: int) -> _Candidate | None:
        """The largest aligned block of at most ``lines`` lines around the edit in ``budget``."""
        while lines >= 1:
            region = self._region(doc, lines)
            if region is not None and region.cost <= budget:
                return region
            lines //= 2
        return None

    def _imported_definitions(
        self, doc: Document, others: list[Document]
    ) -> Iterator[_Candidate]:
        rules = doc.spec.imports if doc.spec is not None else None
        if rules is None or doc.tree is None or not others:
            return
        by_key: dict[str, Document] = {}
        for other in others:
            # one module system: TypeScript imports JavaScript files and back
            if other.spec is not None and other.spec.imports is rules:
                for key in rules.module_keys(uri_path(other.uri)):
                    by_key.setdefault(key, other)
        importer = uri_path(doc.uri)
        for imported in rules.read_imports(doc.tree.root_node):
            target = next(
                (by_key[k] for k in rules.resolve(imported.module, importer) if k in by_key), None
            )
            if target is None or target.tree is None:
                continue
            filename = self.filename(target.uri)
            for name, node in rules.read_definitions(target.tree.root_node):
                if imported.names and name not in imported.names:
                    continue
                text = _head_lines(decode_text(target.buffer.data[node.start_byte : node.end_byte]))
                yield _Candidate(
                    (target.uri, "definition", name),
                    ContextChunk(filename, text),
                    fit=_definition_within(target.uri, name, filename, text),
                )


def _head_lines(text: str, count: int = DEFINITION_LINES) -> str:
    lines = text.splitlines()[:count]
    return "".join(f"{line}\n" for line in lines)


def _definition_within(
    uri: str, name: str, filename: str, text: str
) -> Callable[[int], _Candidate | None]:
    """A definition's first lines that fit a budget (none when not even its first does)."""

    def fit(budget: int) -> _Candidate | None:
        room = budget - len(filename) - 1
        kept: list[str] = []
        for line in text.splitlines(keepends=True):
            if room < len(line):
                break
            kept.append(line)
            room -= len(line)
        if not kept:
            return None
        return _Candidate((uri, "definition", name), ContextChunk(filename, "".join(kept)))

    return fit


@dataclass(frozen=True, slots=True)
class PromptContext:
    """What a request carries besides its own document's window."""

    extra: tuple[ContextChunk, ...] = ()
    filename: str = ""
    repo_name: str = ""


def prompt_context(
    cross_file: CrossFileContext, documents: DocumentStore, uri: str
) -> PromptContext:
    """The cross-file chunks, file name and project name for a request in ``uri``."""
    doc = documents.get(uri)
    if doc is None:
        return PromptContext()
    return PromptContext(
        extra=cross_file.chunks_for(doc),
        filename=cross_file.filename(uri),
        repo_name=cross_file.repo_name(),
    )

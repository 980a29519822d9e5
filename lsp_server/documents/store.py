"""The open documents by URI: ``didOpen``/``didChange``/``didClose`` land here.

``DocumentStore`` opens each document with its grammar (from the language
registry), the negotiated position encoding and the parse size limit, and
passes changing limits on to every open document.

Versions are recorded as the client sends them. A version that does not
increase is logged and still applied: the changes are relative to the text
the client has, so dropping them would desynchronise us for good.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

from lsprotocol.types import PositionEncodingKind, TextDocumentContentChangeEvent

from lsp_server.documents.document import DEFAULT_MAX_PARSE_BYTES, Document
from lsp_server.documents.languages import LanguageRegistry, default_registry

logger = logging.getLogger(__name__)


class UnknownDocumentError(LookupError):
    """A change or lookup names a document that is not open."""


class DocumentStore:
    """The open documents by URI, with the negotiated position encoding."""

    def __init__(
        self,
        position_encoding: PositionEncodingKind = PositionEncodingKind.Utf16,
        max_parse_bytes: int = DEFAULT_MAX_PARSE_BYTES,
        languages: LanguageRegistry | None = None,
    ) -> None:
        self._docs: dict[str, Document] = {}
        self._encoding = position_encoding
        self._max_parse_bytes = max_parse_bytes
        self.languages = languages if languages is not None else default_registry()

    def __repr__(self) -> str:
        return (
            f"DocumentStore({len(self._docs)} open, encoding={self._encoding.value}, "
            f"max_parse_bytes={self._max_parse_bytes})"
        )

    @property
    def position_encoding(self) -> PositionEncodingKind:
        """How LSP characters are counted (negotiated at initialize)."""
        return self._encoding

    @position_encoding.setter
    def position_encoding(self, encoding: PositionEncodingKind) -> None:
        self._encoding = PositionEncodingKind(encoding)
        for doc in self._docs.values():
            doc.encoding = self._encoding

    @property
    def max_parse_bytes(self) -> int:
        """Documents larger than this are kept as text only."""
        return self._max_parse_bytes

    @max_parse_bytes.setter
    def max_parse_bytes(self, limit: int) -> None:
        if limit == self._max_parse_bytes:
            return
        self._max_parse_bytes = limit
        for doc in self._docs.values():
            doc.max_parse_bytes = limit
            doc.reconsider_parse()

    def open(self, uri: str, language_id: str, version: int, text: str) -> Document:
        """Open (or re-open, replacing) a document."""
        doc = Document(
            uri,
            language_id,
            version,
            text,
            spec=self.languages.resolve(language_id, uri),
            encoding=self._encoding,
            max_parse_bytes=self._max_parse_bytes,
        )
        self._docs[uri] = doc
        return doc

    def change(
        self, uri: str, version: int, changes: Sequence[TextDocumentContentChangeEvent]
    ) -> Document:
        """Apply a ``didChange``; raises ``UnknownDocumentError`` if ``uri`` is not open."""
        doc = self._docs.get(uri)
        if doc is None:
            raise UnknownDocumentError(uri)
        if version <= doc.version:
            logger.debug("%s: version %d after %d, applied anyway", uri, version, doc.version)
        doc.apply_changes(changes)
        doc.version = version
        return doc

    def close(self, uri: str) -> None:
        """Forget a document (closing an unknown one is not an error)."""
        self._docs.pop(uri, None)

    def get(self, uri: str) -> Document | None:
        """The open document, or None."""
        return self._docs.get(uri)

    def __contains__(self, uri: object) -> bool:
        return uri in self._docs

    def __len__(self) -> int:
        return len(self._docs)

    def __iter__(self) -> Iterator[Document]:
        return iter(list(self._docs.values()))

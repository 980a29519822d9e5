"""Plain-text models of a trace's open documents, updated event by event.

``TraceDocuments`` validates each event against the current texts (the
document is open, positions and ranges lie inside it) before applying it, so
the reader can report a bad line, and replay, simulate and the synthesizer's
self-check can see the text an event acts on.
"""

from __future__ import annotations

from lsp_server.observe.trace.format import (
    AcceptEvent,
    ChangeEvent,
    CompleteEvent,
    Event,
    OpenEvent,
    Position,
    ShownEvent,
    TextChange,
    utf16_to_index,
)


class TraceDocuments:
    """Plain-text models of the open documents, updated event by event.

    ``apply`` validates an event against the current texts (the document is
    open, positions and ranges lie inside it) and then applies it; it raises
    ValueError on anything that does not fit.
    """

    def __init__(self) -> None:
        self._lines: dict[str, list[str]] = {}
        self.language: dict[str, str] = {}

    def __contains__(self, uri: object) -> bool:
        return uri in self._lines

    def uris(self) -> list[str]:
        """The open documents' URIs, in opening order."""
        return list(self._lines)

    def text(self, uri: str) -> str:
        """The current text of an open document."""
        return "\n".join(self._doc(uri))

    def line(self, uri: str, line: int) -> str:
        """One line of an open document (without its newline)."""
        return self._doc(uri)[line]

    def line_count(self, uri: str) -> int:
        """How many lines the document has (an empty text has one)."""
        return len(self._doc(uri))

    def index(self, uri: str, position: Position) -> tuple[int, int]:
        """``(line, str index)`` of a position; ValueError when it is outside the text."""
        lines = self._doc(uri)
        if position.line >= len(lines):
            raise ValueError(f"line {position.line} is past the end of {uri} ({len(lines)} lines)")
        return position.line, utf16_to_index(lines[position.line], position.character)

    def check(self, uri: str, position: Position) -> None:
        """Raise ValueError unless ``position`` lies inside the document."""
        self.index(uri, position)

    def apply(self, event: Event) -> None:
        """Validate ``event`` against the documents, then apply it."""
        if isinstance(event, OpenEvent):
            if event.uri in self._lines:
                raise ValueError(f"{event.uri} is already open")
            self._lines[event.uri] = event.text.split("\n")
            self.language[event.uri] = event.language_id
        elif isinstance(event, ChangeEvent):
            for change in event.changes:
                self._change(event.uri, change)
        elif isinstance(event, CompleteEvent | ShownEvent):
            self.check(event.uri, event.position)
        elif isinstance(event, AcceptEvent):
            self._doc(event.uri)
        else:
            self._doc(event.uri)
            del self._lines[event.uri]
            self.language.pop(event.uri, None)

    def _doc(self, uri: str) -> list[str]:
        try:
            return self._lines[uri]
        except KeyError:
            raise ValueError(f"{uri} is not open") from None

    def _change(self, uri: str, change: TextChange) -> None:
        lines = self._doc(uri)
        if change.range is None:
            lines[:] = change.text.split("\n")
            return
        start, end = change.range
        if (end.line, end.character) < (start.line, start.character):
            raise ValueError("a range's end is before its start")
        sl, si = self.index(uri, start)
        el, ei = self.index(uri, end)
        head, tail = lines[sl][:si], lines[el][ei:]
        new = (head + change.text + tail).split("\n")
        lines[sl : el + 1] = new

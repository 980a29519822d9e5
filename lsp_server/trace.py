"""The scopecache-trace v1 format: an editing session as JSON Lines.

Line 1 is the header (``format``, ``version``, ``final`` texts, ``meta``);
every further line is one event: ``open``, ``change``, ``complete`` or
``close``, with ``t`` in seconds from the start and LSP positions in UTF-16
code units. ``TraceWriter`` streams events out; ``iter_trace`` and
``read_trace`` read them back and validate every line, reporting problems as
``TraceError("trace.jsonl:17: ...")``; ``read_header`` reads line 1 only.
``TraceDocuments`` keeps the plain text of every open document while a
trace is read, so positions and ranges can be checked (and so replay and
simulate can see the text an event acts on).

A trace holds source code (the ``final`` texts, ``open`` texts) and nothing
else: the writer records exactly what it is given, so recorders must never
pass settings, environment values or credentials into a header's ``meta``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

logger = logging.getLogger(__name__)

TRACE_FORMAT = "scopecache-trace"
TRACE_VERSION = 1
OPS = ("open", "change", "complete", "close")
CompletionKind = Literal["inline", "list"]


class TraceError(ValueError):
    """A trace file is malformed; the message starts with ``file:line:``."""


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (LSP's default position unit)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_to_index(line: str, character: int) -> int:
    """The ``str`` index of UTF-16 column ``character`` in ``line``.

    Raises ValueError past the end of the line or inside a surrogate pair.
    """
    if line.isascii():
        if character > len(line):
            raise ValueError(f"character {character} is past the end of the line ({len(line)})")
        return character
    units = 0
    for index, ch in enumerate(line):
        if units == character:
            return index
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > character:
            raise ValueError(f"character {character} splits a surrogate pair")
    if units == character:
        return len(line)
    raise ValueError(f"character {character} is past the end of the line ({units})")


@dataclass(frozen=True, slots=True)
class Position:
    """A zero-based line and UTF-16 character offset."""

    line: int
    character: int

    def to_json(self) -> dict[str, int]:
        """LSP's JSON shape."""
        return {"line": self.line, "character": self.character}


@dataclass(frozen=True, slots=True)
class TextChange:
    """One ``TextDocumentContentChangeEvent``; ``range=None`` replaces the whole text."""

    text: str
    range: tuple[Position, Position] | None = None

    def to_json(self) -> dict[str, Any]:
        """LSP's JSON shape."""
        if self.range is None:
            return {"text": self.text}
        start, end = self.range
        return {"range": {"start": start.to_json(), "end": end.to_json()}, "text": self.text}


@dataclass(frozen=True, kw_only=True, slots=True)
class OpenEvent:
    """The editor opened a document."""

    t: float
    uri: str
    text: str
    language_id: str = "python"
    op: Literal["open"] = "open"


@dataclass(frozen=True, kw_only=True, slots=True)
class ChangeEvent:
    """The editor changed a document (changes apply in order)."""

    t: float
    uri: str
    changes: tuple[TextChange, ...]
    op: Literal["change"] = "change"


@dataclass(frozen=True, kw_only=True, slots=True)
class CompleteEvent:
    """The editor asked for a completion; ``expect`` is what the user went on to type."""

    t: float
    uri: str
    position: Position
    kind: CompletionKind = "inline"
    expect: str | None = None
    op: Literal["complete"] = "complete"


@dataclass(frozen=True, kw_only=True, slots=True)
class CloseEvent:
    """The editor closed a document."""

    t: float
    uri: str
    op: Literal["close"] = "close"


Event = OpenEvent | ChangeEvent | CompleteEvent | CloseEvent


@dataclass(kw_only=True)
class TraceHeader:
    """Line 1: each file's final text and free-form, secret-free metadata."""

    final: dict[str, str]
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The header line's JSON object."""
        return {
            "format": TRACE_FORMAT,
            "version": TRACE_VERSION,
            "final": self.final,
            "meta": self.meta,
        }


@dataclass(kw_only=True)
class Trace:
    """A whole trace in memory."""

    header: TraceHeader
    events: list[Event]


def event_to_json(event: Event) -> dict[str, Any]:
    """The JSON object of one event line."""
    data: dict[str, Any] = {"t": round(event.t, 4), "op": event.op, "uri": event.uri}
    if isinstance(event, OpenEvent):
        data["languageId"] = event.language_id
        data["text"] = event.text
    elif isinstance(event, ChangeEvent):
        data["changes"] = [change.to_json() for change in event.changes]
    elif isinstance(event, CompleteEvent):
        data["position"] = event.position.to_json()
        data["kind"] = event.kind
        if event.expect is not None:
            data["expect"] = event.expect
    return data


def _require(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    if key not in data:
        raise ValueError(f"missing {key!r}")
    value = data[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise ValueError(f"{key!r} has the wrong type ({type(value).__name__})")
    return value


def _position(data: Any) -> Position:
    if not isinstance(data, Mapping):
        raise ValueError("a position must be an object")
    line = _require(data, "line", int)
    character = _require(data, "character", int)
    if line < 0 or character < 0:
        raise ValueError("positions are never negative")
    return Position(line, character)


def event_from_json(data: Any) -> Event:
    """Parse one event object; raises ValueError naming what is wrong."""
    if not isinstance(data, Mapping):
        raise ValueError("an event must be a JSON object")
    op = _require(data, "op", str)
    if op not in OPS:
        raise ValueError(f"unknown op {op!r} (expected one of {', '.join(OPS)})")
    t = float(_require(data, "t", (int, float)))
    if t < 0:
        raise ValueError("'t' must be >= 0")
    uri = _require(data, "uri", str)
    if op == "open":
        language = data.get("languageId", "python")
        if not isinstance(language, str):
            raise ValueError("'languageId' must be a string")
        return OpenEvent(t=t, uri=uri, text=_require(data, "text", str), language_id=language)
    if op == "change":
        changes = []
        for raw in _require(data, "changes", list):
            if not isinstance(raw, Mapping):
                raise ValueError("a change must be an object")
            text = _require(raw, "text", str)
            rng = raw.get("range")
            if rng is None:
                changes.append(TextChange(text))
            elif isinstance(rng, Mapping):
                changes.append(
                    TextChange(text, (_position(rng.get("start")), _position(rng.get("end"))))
                )
            else:
                raise ValueError("'range' must be an object")
        return ChangeEvent(t=t, uri=uri, changes=tuple(changes))
    if op == "complete":
        kind = data.get("kind", "inline")
        if kind not in ("inline", "list"):
            raise ValueError(f"unknown completion kind {kind!r}")
        expect = data.get("expect")
        if expect is not None and not isinstance(expect, str):
            raise ValueError("'expect' must be a string")
        return CompleteEvent(
            t=t, uri=uri, position=_position(data.get("position")), kind=kind, expect=expect
        )
    return CloseEvent(t=t, uri=uri)


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
        elif isinstance(event, CompleteEvent):
            self.check(event.uri, event.position)
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


def iter_trace(path: str | Path) -> tuple[TraceHeader, Iterator[tuple[Event, TraceDocuments]]]:
    """Read the header now and return it with a lazy, validating event iterator.

    The iterator yields each event with the documents as they are *before*
    the event is applied (positions of a ``complete`` refer to that state);
    the event is applied when the next one is requested.
    """
    name = Path(path).name
    fh = open(path, encoding="utf-8")
    try:
        header = _header_line(fh, name)
    except TraceError:
        fh.close()
        raise

    def events() -> Iterator[tuple[Event, TraceDocuments]]:
        docs = TraceDocuments()
        last_t = 0.0
        with fh:
            for number, raw in enumerate(fh, start=2):
                if not raw.strip():
                    continue
                try:
                    event = event_from_json(json.loads(raw))
                    if event.t < last_t:
                        raise ValueError(f"'t' goes backwards ({event.t} < {last_t})")
                    last_t = event.t
                    if isinstance(event, CompleteEvent):
                        docs.check(event.uri, event.position)
                    yield event, docs
                    docs.apply(event)
                except ValueError as exc:  # JSONDecodeError is a ValueError
                    raise TraceError(f"{name}:{number}: {exc}") from exc

    return header, events()


def read_header(path: str | Path) -> TraceHeader:
    """Read and validate line 1 only (the final texts and meta), not the events."""
    with open(path, encoding="utf-8") as fh:
        return _header_line(fh, Path(path).name)


def _header_line(fh: IO[str], name: str) -> TraceHeader:
    first = fh.readline()
    try:
        return _header(json.loads(first) if first.strip() else None)
    except (ValueError, TypeError) as exc:
        raise TraceError(f"{name}:1: {exc}") from exc


def _header(data: Any) -> TraceHeader:
    if not isinstance(data, Mapping):
        raise ValueError("the first line must be the scopecache-trace header object")
    if data.get("format") != TRACE_FORMAT:
        raise ValueError(f"not a {TRACE_FORMAT} file (format={data.get('format')!r})")
    if data.get("version") != TRACE_VERSION:
        raise ValueError(f"unsupported trace version {data.get('version')!r}")
    final = data.get("final", {})
    if not isinstance(final, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in final.items()
    ):
        raise ValueError("'final' must map URIs to texts")
    meta = data.get("meta", {})
    if not isinstance(meta, Mapping):
        raise ValueError("'meta' must be an object")
    return TraceHeader(final=dict(final), meta=dict(meta))


def read_trace(path: str | Path) -> Trace:
    """Read and validate a whole trace; raises TraceError with the line number."""
    header, events = iter_trace(path)
    return Trace(header=header, events=[event for event, _docs in events])


class TraceWriter:
    """Write a trace line by line (JSON Lines, UTF-8).

    Records exactly what it is given: never pass settings or credentials in
    ``meta``. Use as a context manager, or call ``close``.
    """

    def __init__(self, target: str | Path | IO[str], header: TraceHeader) -> None:
        if isinstance(target, str | Path):
            self._fh: IO[str] = open(target, "w", encoding="utf-8", newline="\n")
            self._owned = True
        else:
            self._fh = target
            self._owned = False
        self._write(header.to_json())
        self.count = 0

    def _write(self, data: dict[str, Any]) -> None:
        self._fh.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")

    def write(self, event: Event) -> None:
        """Append one event."""
        self._write(event_to_json(event))
        self.count += 1

    def close(self) -> None:
        """Flush, and close the file if the writer opened it."""
        self._fh.flush()
        if self._owned:
            self._fh.close()

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def write_trace(path: str | Path, trace: Trace) -> None:
    """Write a whole in-memory trace."""
    with TraceWriter(path, trace.header) as writer:
        for event in trace.events:
            writer.write(event)

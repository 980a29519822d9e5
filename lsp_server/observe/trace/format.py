"""The scopecache-trace v1 format: an editing session as JSON Lines.

Line 1 is the header (``format``, ``version``, ``final`` texts, ``meta``);
every further line is one event: ``open``, ``change``, ``complete`` or
``close``, with ``t`` in seconds from the start and LSP positions in UTF-16
code units. A recording server adds two more, which replay and simulate read
to report what the developer kept (``lsp_server.kit.acceptance``); readers
that need only the four above ignore them:

* ``shown``: a suggestion went out (``item`` id, ``position``, ``text``,
  ``source``, ``language``, ``scope`` kind, ``latencyMs``);
* ``accept``: the editor accepted it (``item``, ``kind`` full / word /
  line, and ``acceptedLength``, UTF-16 code units of its text accepted so
  far, absent for all of it). The edit itself is an ordinary ``change``.

A recorded header's ``meta`` then holds ``acceptance.windowsSeconds`` and
the session's length in ``seconds``. This module holds the record types and their JSON shapes;
``reader`` reads and validates a trace (``TraceError("trace.jsonl:17:
...")``), ``writer`` writes one, and ``documents`` keeps the
plain text of every open document while a trace is read.

A trace holds source code (the ``final`` texts, ``open`` texts) and nothing
else: the writer records exactly what it is given, so recorders must never
pass settings, environment values or credentials into a header's ``meta``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Literal

logger = logging.getLogger(__name__)

TRACE_FORMAT = "scopecache-trace"
TRACE_VERSION = 1
OPS = ("open", "change", "complete", "close", "shown", "accept")
#: how much of a suggestion an ``accept`` event took
AcceptKind = Literal["full", "word", "line"]
ACCEPT_KINDS: tuple[str, ...] = ("full", "word", "line")
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


@dataclass(frozen=True, kw_only=True, slots=True)
class ShownEvent:
    """A suggestion went out at ``position`` (recorded by a server, after its ``complete``)."""

    t: float
    uri: str
    item: str
    position: Position
    text: str
    source: str
    language: str
    scope: str
    latency_ms: float = 0.0
    op: Literal["shown"] = "shown"


@dataclass(frozen=True, kw_only=True, slots=True)
class AcceptEvent:
    """The editor accepted the suggestion ``item``; ``length`` None: all of it."""

    t: float
    uri: str
    item: str
    kind: AcceptKind = "full"
    length: int | None = None
    op: Literal["accept"] = "accept"


Event = OpenEvent | ChangeEvent | CompleteEvent | CloseEvent | ShownEvent | AcceptEvent


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
    elif isinstance(event, ShownEvent):
        data["item"] = event.item
        data["position"] = event.position.to_json()
        data["text"] = event.text
        data["source"] = event.source
        data["language"] = event.language
        data["scope"] = event.scope
        data["latencyMs"] = round(event.latency_ms, 3)
    elif isinstance(event, AcceptEvent):
        data["item"] = event.item
        data["kind"] = event.kind
        if event.length is not None:
            data["acceptedLength"] = event.length
    return data

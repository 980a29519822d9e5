"""What the developer kept in a recorded session: the ``acceptance`` fields from a trace.

A server that records (``recordTrace``) writes every suggestion that went
out (``shown``) and every accept the editor reported (``accept``) beside
the edits, and its acceptance windows and the session's length in the
header. ``session_acceptance`` runs the server's own ``AcceptanceLedger``
over those events in trace time: the accepted text is followed through the
recorded changes and counted when each window has passed (by the session's
end), so ``scopecache replay`` and ``scopecache simulate`` report the same
``acceptance`` object the live server did: events are replayed in the order
they were recorded, which is the order the server received them, so an
accept recorded before its edit waits for that edit here as it did there. A trace recorded without
``recordText`` holds masked texts (letters and digits as ``x``): deletions
count the same, but a letter changed into another one goes unseen, so its
retained counts can only be higher than the live ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lsp_server.observe.acceptance import AcceptanceLedger, Attribution, ShownSuggestion
from lsp_server.observe.retained import Point
from lsp_server.observe.trace.documents import TraceDocuments
from lsp_server.observe.trace.format import (
    AcceptEvent,
    ChangeEvent,
    CloseEvent,
    Event,
    ShownEvent,
    TraceHeader,
    utf16_len,
    utf16_to_index,
)
from lsp_server.observe.trace.reader import iter_trace

#: the windows of a trace that does not say (the settings' defaults)
DEFAULT_WINDOWS = (30.0, 120.0)


def recorded_windows(meta: Mapping[str, Any]) -> tuple[float, float]:
    """The acceptance windows a trace header's ``meta`` names (else the defaults)."""
    acceptance = meta.get("acceptance")
    windows = acceptance.get("windowsSeconds") if isinstance(acceptance, Mapping) else None
    if (
        isinstance(windows, list)
        and len(windows) == 2
        and all(isinstance(w, int | float) and not isinstance(w, bool) and w > 0 for w in windows)
    ):
        return float(windows[0]), float(windows[1])
    return DEFAULT_WINDOWS


def _index(line: str, character: int) -> int:
    """A UTF-16 column's ``str`` index, clamped into the line."""
    try:
        return utf16_to_index(line, min(character, utf16_len(line)))
    except ValueError:  # inside a surrogate pair
        return utf16_to_index(line, max(0, character - 1))


class _SessionTexts:
    """The trace's documents as the ledger reads them."""

    def __init__(self) -> None:
        self.docs = TraceDocuments()

    def read(self, uri: str, start: Point, end: Point, limit: int) -> str | None:
        if uri not in self.docs:
            return None
        count = self.docs.line_count(uri)
        (sl, sc), (el, ec) = start, end
        if sl >= count:
            return ""
        el = min(el, count - 1)
        first = self.docs.line(uri, sl)
        if sl == el:
            return first[_index(first, sc) : _index(first, ec)][:limit]
        parts = [first[_index(first, sc) :]]
        size = len(parts[0])
        for n in range(sl + 1, el):
            if size > limit:
                break
            parts.append(self.docs.line(uri, n))
            size += len(parts[-1]) + 1
        last = self.docs.line(uri, el)
        parts.append(last[: _index(last, ec)])
        return "\n".join(parts)[:limit]


def session_acceptance(header: TraceHeader, events: Iterable[Event]) -> dict[str, Any]:
    """The ``acceptance`` object of ``scopecache/stats`` for a recorded session."""
    texts = _SessionTexts()
    now = 0.0
    short, long = recorded_windows(header.meta)
    ledger = AcceptanceLedger(texts.read, clock=lambda: now, short_window=short, long_window=long)
    for event in events:
        now = event.t
        ledger.measure_due(now)
        if isinstance(event, ShownEvent):
            attribution = Attribution(event.source, event.language, event.scope)
            ledger.shown(
                ShownSuggestion(
                    event.item,
                    event.uri,
                    event.position.line,
                    event.position.character,
                    event.text,
                    attribution,
                    event.latency_ms,
                )
            )
        elif isinstance(event, AcceptEvent):
            ledger.accept(event.item, event.length, event.kind)
        elif isinstance(event, ChangeEvent) and ledger.expecting(event.uri):
            if any(change.range is None for change in event.changes):
                before = texts.docs.text(event.uri)
                texts.docs.apply(event)
                ledger.replaced(event.uri, before, texts.docs.text(event.uri))
                continue
            for change in event.changes:
                assert change.range is not None
                start, end = change.range
                ledger.edit(
                    event.uri, (start.line, start.character), (end.line, end.character), change.text
                )
        elif isinstance(event, CloseEvent):
            ledger.closed(event.uri)
        texts.docs.apply(event)
    seconds = header.meta.get("seconds")
    if isinstance(seconds, int | float) and not isinstance(seconds, bool):
        now = max(now, float(seconds))
    ledger.measure_due(now)
    return ledger.snapshot()


def trace_acceptance(path: str | Path) -> dict[str, Any]:
    """``session_acceptance`` of a trace file (read and validated again, event by event)."""
    header, events = iter_trace(path)
    return session_acceptance(header, (event for event, _docs in events))


def _share(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.0f}%" if whole else "-"


def acceptance_rows(acceptance: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Table rows (measure, value) for an ``acceptance`` object; none before anything was shown."""
    if not acceptance.get("shown"):
        return []
    rows = [
        (
            "suggestions shown / accepted",
            f"{acceptance['shown']} / {acceptance['accepted']} "
            f"({_share(acceptance['accepted'], acceptance['shown'])})",
        ),
        ("accepted characters", str(acceptance["acceptedChars"])),
    ]
    short, long = acceptance.get("windowsSeconds", DEFAULT_WINDOWS)
    for window, retained, measured in (
        (short, "retainedChars30s", "measuredChars30s"),
        (long, "retainedChars120s", "measuredChars120s"),
    ):
        rows.append(
            (
                f"kept after {window:g} s (of those counted)",
                f"{acceptance[retained]} of {acceptance[measured]} "
                f"({_share(acceptance[retained], acceptance[measured])})",
            )
        )
    return rows

"""Reading a scopecache-trace v1 file, validating every line.

``iter_trace`` and ``read_trace`` read the events back and check each one
(its fields, that ``t`` never goes backwards, that positions and ranges lie
inside the documents), reporting problems as ``TraceError("trace.jsonl:17:
...")``; ``read_header`` reads line 1 only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from lsp_server.observe.trace.documents import TraceDocuments
from lsp_server.observe.trace.format import (
    ACCEPT_KINDS,
    OPS,
    TRACE_FORMAT,
    TRACE_VERSION,
    AcceptEvent,
    ChangeEvent,
    CloseEvent,
    CompleteEvent,
    Event,
    OpenEvent,
    Position,
    ShownEvent,
    TextChange,
    Trace,
    TraceError,
    TraceHeader,
)


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
    if op == "shown":
        latency = data.get("latencyMs", 0.0)
        if isinstance(latency, bool) or not isinstance(latency, int | float):
            raise ValueError("'latencyMs' must be a number")
        return ShownEvent(
            t=t,
            uri=uri,
            item=_require(data, "item", str),
            position=_position(data.get("position")),
            text=_require(data, "text", str),
            source=_require(data, "source", str),
            language=_require(data, "language", str),
            scope=_require(data, "scope", str),
            latency_ms=float(latency),
        )
    if op == "accept":
        kind = data.get("kind", "full")
        if kind not in ACCEPT_KINDS:
            raise ValueError(f"unknown accept kind {kind!r}")
        length = data.get("acceptedLength")
        if length is not None and (
            isinstance(length, bool) or not isinstance(length, int) or length < 0
        ):
            raise ValueError("'acceptedLength' must be an integer >= 0")
        return AcceptEvent(t=t, uri=uri, item=_require(data, "item", str), kind=kind, length=length)
    return CloseEvent(t=t, uri=uri)


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
                    if isinstance(event, CompleteEvent | ShownEvent):
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
    try:
        first = fh.readline()
        data = json.loads(first) if first.strip() else None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TraceError(
            f"{name}:1: not a {TRACE_FORMAT} file (line 1 is not a JSON header: {exc}); "
            "record one with `scopecache serve --record-trace FILE` or `scopecache trace synth`"
        ) from exc
    try:
        return _header(data)
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

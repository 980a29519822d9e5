"""Record the session a server serves as a scopecache-trace (``serve --record-trace``).

What is recorded: didOpen, didChange, didClose and every completion request
(position and kind), every suggestion that went out (``shown``: its item id,
text, source, language, scope kind and latency) and every accept the editor
reported (``accept``: item id, kind, length), with times relative to the
first event. The header's ``meta`` says which acceptance windows were in
effect and how long the session lasted, so a replay counts the same retained
characters (``lsp_server.kit.acceptance``). Never settings, API keys or
tokens, and nothing of documents matching the ``exclude`` globs.

Document texts (and suggestion texts) are source code, so they are written
only when the user opts in (``recordText``). Otherwise every letter and digit is masked as ``x``
(non-ASCII characters by as many ``x`` as their UTF-16 length): positions,
line structure, indentation and punctuation survive, so the trace still
replays (timing, cursor movement, the shape of the code) without revealing
names, strings or comments.

Events are buffered and written by a worker thread, never on the event
loop; the header (which carries each file's final text) is written when the
recording is finished, in front of the events.

Beside the trace, a side record ``TRACE.answers.jsonl`` keeps every answer
the gate judged (``completion/gate.py``), shown or held back: where, the
answer as found, its doubtful tokens' probabilities, what was shown and why
not. The trace format stays as it is; ``lsp_server.kit.confidence`` pairs
the two to score another confidence bar on the same session. Texts in it are
masked like the trace's unless ``recordText`` is on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lsprotocol import types

from lsp_server.completion.gate import Surroundings, Verdict
from lsp_server.completion.pipeline import Suggestion
from lsp_server.documents.exclude import is_excluded
from lsp_server.documents.positions import PositionLike
from lsp_server.documents.syntax import SyntaxContext
from lsp_server.observe.trace.documents import TraceDocuments
from lsp_server.observe.trace.format import (
    AcceptEvent,
    AcceptKind,
    ChangeEvent,
    CloseEvent,
    CompleteEvent,
    Event,
    OpenEvent,
    Position,
    ShownEvent,
    TextChange,
    TraceHeader,
    event_to_json,
)
from lsp_server.observe.trace.writer import TraceWriter
from lsp_server.server.accepts import scope_kind

logger = logging.getLogger(__name__)

#: events buffered before a background write
FLUSH_EVERY = 256
#: judged answers kept for the side record (a long session's first ones)
MAX_ANSWERS = 100_000


def mask(text: str) -> str:
    """Letters and digits become ``x``; UTF-16 lengths and layout are kept."""
    out = []
    for char in text:
        if char.isascii():
            out.append("x" if char.isalnum() else char)
        elif char.isspace():
            out.append(char)
        else:
            out.append("x" * (len(char.encode("utf-16-le")) // 2))
    return "".join(out)


class TraceRecorder:
    """Turns the LSP traffic of one server into a trace file."""

    def __init__(
        self,
        path: str | Path,
        *,
        include_text: bool = False,
        exclude: Sequence[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.include_text = include_text
        self.exclude = list(exclude)
        self._clock = clock
        self._start: float | None = None
        self._docs = TraceDocuments()
        self._final: dict[str, str] = {}
        self._pending: list[Event] = []
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="scopecache-trace")
        fd, name = tempfile.mkstemp(prefix=".scopecache-trace-", dir=self.path.parent or ".")
        os.close(fd)
        self._events_file = Path(name)
        self.recorded = 0
        self._closed = False
        #: the acceptance windows in effect (seconds), written into the header's meta
        self.acceptance_windows: tuple[float, float] = (30.0, 120.0)
        #: the side record of judged answers (``answers_path``), at most ``MAX_ANSWERS``
        self._answers: list[dict[str, object]] = []

    def _t(self) -> float:
        now = self._clock()
        if self._start is None:
            self._start = now
        return now - self._start

    def _text(self, text: str) -> str:
        return text if self.include_text else mask(text)

    def _skip(self, uri: str) -> bool:
        return self._closed or is_excluded(uri, self.exclude)

    def _add(self, event: Event) -> None:
        try:
            self._docs.apply(event)
        except ValueError as exc:  # the editor and we disagree: keep the trace valid
            logger.debug("not recording an event that does not fit: %s", exc)
            return
        self._pending.append(event)
        self.recorded += 1
        if len(self._pending) >= FLUSH_EVERY:
            self._flush_soon()

    def open(self, uri: str, language_id: str, text: str) -> None:
        """Record a textDocument/didOpen."""
        if not self._skip(uri) and uri not in self._docs:
            event = OpenEvent(t=self._t(), uri=uri, text=self._text(text), language_id=language_id)
            self._add(event)

    def change(self, uri: str, changes: Sequence[types.TextDocumentContentChangeEvent]) -> None:
        """Record a textDocument/didChange."""
        if self._skip(uri) or uri not in self._docs:
            return
        recorded = []
        for change in changes:
            text = self._text(change.text)
            if isinstance(change, types.TextDocumentContentChangePartial):
                r = change.range
                start = Position(r.start.line, r.start.character)
                end = Position(r.end.line, r.end.character)
                recorded.append(TextChange(text=text, range=(start, end)))
            else:
                recorded.append(TextChange(text=text))
        self._add(ChangeEvent(t=self._t(), uri=uri, changes=tuple(recorded)))

    def complete(self, uri: str, position: PositionLike, kind: str) -> None:
        """A completion request (inline or list)."""
        if self._skip(uri) or uri not in self._docs:
            return
        pos = Position(position.line, position.character)
        event = CompleteEvent(
            t=self._t(), uri=uri, position=pos, kind="list" if kind == "list" else "inline"
        )
        self._add(event)

    def shown(
        self, item: str, uri: str, ctx: SyntaxContext, text: str, source: str, latency_ms: float
    ) -> None:
        """A suggestion went out at the context's cursor."""
        if self._skip(uri) or uri not in self._docs:
            return
        event = ShownEvent(
            t=self._t(),
            uri=uri,
            item=item,
            position=Position(ctx.line, ctx.character),
            text=self._text(text),
            source=source,
            language=ctx.language,
            scope=scope_kind(ctx),
            latency_ms=latency_ms,
        )
        self._add(event)

    @property
    def answers_path(self) -> Path:
        """Where the side record of judged answers is written."""
        return self.path.with_name(self.path.name + ".answers.jsonl")

    def answer(
        self, uri: str, ctx: SyntaxContext, found: Suggestion, around: Surroundings,
        verdict: Verdict,
    ) -> None:  # fmt: skip
        """An answer the gate judged, shown or held back (the side record)."""
        if self._skip(uri) or uri not in self._docs or len(self._answers) >= MAX_ANSWERS:
            return
        record: dict[str, object] = {
            "t": round(self._t(), 4), "uri": uri,
            "position": {"line": ctx.line, "character": ctx.character},
            "source": found.source, "answer": self._text(found.text),
            "doubts": found.confidence.to_list() if found.confidence is not None else None,
            "shown": self._text(verdict.text), "heldBack": verdict.held_back,
            "linePrefix": self._text(around.line_prefix),
            "lineSuffix": self._text(around.line_suffix),
            "nextLine": self._text(around.next_line), "lineAbove": self._text(around.line_above),
        }  # fmt: skip
        self._answers.append(record)

    def accept(self, uri: str, item: str, kind: str, length: int | None) -> None:
        """The editor accepted the suggestion ``item`` (``length`` None: all of it)."""
        if self._skip(uri) or uri not in self._docs:
            return
        taken: AcceptKind = "word" if kind == "word" else "line" if kind == "line" else "full"
        self._add(AcceptEvent(t=self._t(), uri=uri, item=item, kind=taken, length=length))

    def close(self, uri: str) -> None:
        """Record a textDocument/didClose (the text at close is the file's final text)."""
        if self._skip(uri) or uri not in self._docs:
            return
        self._final[uri] = self._docs.text(uri)
        self._add(CloseEvent(t=self._t(), uri=uri))

    def _flush_soon(self) -> None:
        batch, self._pending = self._pending, []
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._append(batch)
            return
        loop.run_in_executor(self._executor, self._append, batch)

    def _append(self, batch: list[Event]) -> None:
        with open(self._events_file, "a", encoding="utf-8", newline="\n") as fh:
            for event in batch:
                fh.write(json.dumps(event_to_json(event), ensure_ascii=False) + "\n")

    def finish(self) -> Path:
        """Write the trace file (header first, then the events) and stop recording."""
        if self._closed:
            return self.path
        seconds = self._t() if self._start is not None else 0.0
        self._closed = True
        for uri in self._docs.uris():
            self._final[uri] = self._docs.text(uri)
        batch, self._pending = self._pending, []
        self._executor.submit(self._append, batch).result()
        self._executor.shutdown(wait=True)
        header = TraceHeader(
            final=self._final,
            meta={
                "recorder": "scopecache serve",
                "textIncluded": self.include_text,
                "seconds": round(seconds, 4),
                "acceptance": {"windowsSeconds": list(self.acceptance_windows)},
            },
        )
        with open(self.path, "w", encoding="utf-8", newline="\n") as out:
            TraceWriter(out, header).close()
            with open(self._events_file, encoding="utf-8") as events:
                shutil.copyfileobj(events, out)
        self._events_file.unlink(missing_ok=True)
        if self._answers:
            with open(self.answers_path, "w", encoding="utf-8", newline="\n") as side:
                for record in self._answers:
                    side.write(json.dumps(record, ensure_ascii=False) + "\n")
        logger.info("recorded %d events to %s", self.recorded, self.path)
        return self.path

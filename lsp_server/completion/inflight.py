"""Upstream streams in flight, and the requests attached to them.

When the user types exactly what a running stream predicts, the editor
cancels the old request and asks again one character later. Cancelling the
model's stream then would throw away the answer the user is typing through;
instead the new request attaches to the running stream and is served the rest
of it. A stream the user types forward from (same line, characters added at
the cursor, its text so far still agreeing) lives on while nobody waits for
it: its answer serves the next request by typed-through.

A stream is given up only when it can no longer serve: the user diverged
from its prediction, deleted before the cursor, or went to another line. How
it is given up follows the service's cost model (``transport.cost``): where a
cancel saves the prompt's evaluation it is cancelled at once; where it saves
nothing until the first token (llama.cpp, Ollama read the whole prompt
first) it is *doomed*: closed at its first token, by when the prompt is paid
for and in the server's KV cache, and before any generation is wasted. A
generating stream nobody attaches to for a grace period is cancelled too.

``busy`` tells whether a document has a stream at the service: the pipeline
lets at most one wait there per document.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from cache.entry import Confidence
from cache.keys import LineAnchor
from lsp_server.completion.bounds import AnswerBounds
from transport.backend import chunk_probability, is_cut
from transport.cost import REMOTE_SERVICE, ServiceCost

logger = logging.getLogger(__name__)

#: how long an unattended stream may run before it is cancelled upstream
DEFAULT_GRACE = 0.35
#: the grace never exceeds this, however slow the service
MAX_GRACE = 2.0


@dataclass(eq=False)
class InflightStream:
    """One upstream request being streamed."""

    uri: str
    anchor: LineAnchor
    line_prefix: str
    text: str = ""
    waiters: int = 0
    task: asyncio.Task[str] | None = None
    finished: bool = False
    #: the service cut the answer at the token limit (``transport.backend.CUT_AT_LENGTH``)
    truncated: bool = False
    #: for a speculative stream: the line it was started from and that line's
    #: predicted full text; it lives while the user types towards it
    predicted: tuple[int, str] | None = None
    #: the rules the answer is streamed under (None: read it to its end)
    bounds: AnswerBounds | None = None
    #: a chunk arrived: the service has read the prompt and is generating
    generating: bool = False
    #: it can serve nobody: closed at its first token (see the module docstring)
    doomed: bool = False
    #: the text once its first line is complete (or the stream ended)
    first_line: asyncio.Future[str] | None = field(default=None, repr=False)
    #: why the registry cancelled it (``InflightRegistry.cancelled_by``'s reasons), if it did
    cancelled_for: str | None = None
    #: (offset in ``text``, probability) of each chunk the service scored
    scores: list[tuple[int, float]] = field(default_factory=list, repr=False)
    #: where the first chunk below the bounds' bar (or not scored) starts (None: none)
    first_doubt: int | None = None
    _grace: asyncio.TimerHandle | None = field(default=None, repr=False)

    def confidence(self) -> Confidence | None:
        """How sure the model was of ``text`` (None: the service gave no probabilities)."""
        return Confidence.of_tokens(self.scores) if self.scores else None

    def typed_since(self, line_prefix: str) -> str | None:
        """What was typed since the stream started, or None if not the same line."""
        if not line_prefix.startswith(self.line_prefix):
            return None
        return line_prefix[len(self.line_prefix) :]

    def consistent_with(self, line_prefix: str) -> bool:
        """True while the user's typing agrees with what the stream produced."""
        typed = self.typed_since(line_prefix)
        if typed is None:
            return False
        if self.finished:
            return len(self.text) > len(typed) and self.text.startswith(typed)
        return self.text.startswith(typed) or typed.startswith(self.text)


StreamFactory = Callable[[], AsyncIterator[str]]
OnComplete = Callable[[InflightStream], None]


class InflightRegistry:
    """Running upstream streams, found by line anchor."""

    def __init__(
        self,
        *,
        grace: float = DEFAULT_GRACE,
        cost: Callable[[], ServiceCost] = lambda: REMOTE_SERVICE,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._by_anchor: dict[LineAnchor, list[InflightStream]] = {}
        self._grace = grace
        #: the service's cost model (it may change when the service is identified)
        self.cost = cost
        self._clock = clock
        self.cancelled_upstream = 0
        #: why streams were cancelled: ``moved`` (the user left what they could
        #: serve), ``idle`` (nobody attached within the grace), ``closed``
        #: (document closed), ``stopped`` (shutdown, settings changed)
        self.cancelled_by: dict[str, int] = {}
        #: characters streamed by streams that were then cancelled (generated for nobody)
        self.wasted_chars = 0
        self.completed_upstream = 0
        #: streams that could serve nobody, closed at their first token instead of at once
        self.doomed_upstream = 0

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_anchor.values())

    @property
    def grace(self) -> float:
        """Seconds an unattended stream may still run."""
        return self._grace

    def adapt_grace(self, answer_seconds: float) -> None:
        """Follow the service's answer time.

        A grace shorter than the time to an answer cancels streams before
        they produce anything: the generation is wasted and the next
        keystroke, which could have typed through the answer, asks again.
        """
        self._grace = max(DEFAULT_GRACE, min(MAX_GRACE, answer_seconds))

    def find(self, anchor: LineAnchor, line_prefix: str) -> InflightStream | None:
        """The stream this request can attach to, preferring the latest start."""
        best: InflightStream | None = None
        for stream in self._by_anchor.get(anchor, ()):
            if not stream.doomed and stream.consistent_with(line_prefix) and (
                best is None or len(stream.line_prefix) > len(best.line_prefix)
            ):
                best = stream
        return best

    def start(
        self,
        *,
        uri: str,
        anchor: LineAnchor,
        line_prefix: str,
        open_stream: StreamFactory,
        on_complete: OnComplete,
        predicted: tuple[int, str] | None = None,
        bounds: AnswerBounds | None = None,
    ) -> InflightStream:
        """Start streaming in the background and register the stream."""
        stream = InflightStream(
            uri=uri, anchor=anchor, line_prefix=line_prefix, predicted=predicted, bounds=bounds
        )
        stream.first_line = asyncio.get_running_loop().create_future()
        stream.task = asyncio.ensure_future(self._pump(stream, open_stream, on_complete))
        # A stream whose waiters all left may still fail (service unreachable):
        # its error is the caller's to report, not asyncio's "never retrieved".
        stream.task.add_done_callback(_settle)
        self._by_anchor.setdefault(anchor, []).append(stream)
        return stream

    async def _pump(
        self, stream: InflightStream, open_stream: StreamFactory, on_complete: OnComplete
    ) -> str:
        chunks = open_stream()
        loop = asyncio.get_running_loop()
        clock = self._clock or loop.time
        started = first_at = clock()
        logger.debug("upstream stream %s: asked after %d characters of its line",
                     id(stream), len(stream.line_prefix))
        try:
            async for chunk in chunks:
                if not stream.generating:
                    stream.generating, first_at = True, clock()
                    if stream.doomed:
                        # The prompt is paid for; nothing generated after this serves anyone.
                        self._count_cancel(stream, "moved")
                        raise asyncio.CancelledError
                if is_cut(chunk):
                    stream.truncated = True
                probability = chunk_probability(chunk)
                if probability is not None:
                    stream.scores.append((len(stream.text), probability))
                bounds = stream.bounds
                if bounds is not None and bounds.bar and chunk and stream.first_doubt is None and (
                    bool(stream.scores)
                    if probability is None
                    else bounds.doubts(len(stream.text), probability)
                ):
                    # unsure, or not scored by a service that scores the rest
                    stream.first_doubt = len(stream.text)
                stream.text += chunk
                if bounds is not None:
                    cut = bounds.cut(stream.text, clock() - first_at, stream.first_doubt)
                    if cut is not None:
                        stream.text = stream.text[: cut.length]
                        stream.truncated = stream.truncated or cut.truncated
                        break
                if _has_complete_line(stream.text):
                    _resolve(stream.first_line, stream.text)
            stream.finished = True
            self.completed_upstream += 1
            logger.debug("upstream stream %s: %d characters in %.2fs (first after %.2fs)%s",
                         id(stream), len(stream.text), clock() - started, first_at - started,
                         ", cut" if stream.truncated else "")
        except BaseException as exc:
            _fail(stream.first_line, exc)
            raise
        finally:
            # Backends stream with async generators; closing one early is what
            # cancels the request upstream (plain iterators have nothing to close).
            close = getattr(chunks, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()
            self._forget(stream)
        _resolve(stream.first_line, stream.text)
        on_complete(stream)
        return stream.text

    def _forget(self, stream: InflightStream) -> None:
        streams = self._by_anchor.get(stream.anchor)
        if streams and stream in streams:
            streams.remove(stream)
            if not streams:
                del self._by_anchor[stream.anchor]
        if stream._grace is not None:
            stream._grace.cancel()
            stream._grace = None

    async def wait(self, stream: InflightStream, *, first_line: bool = False) -> str:
        """Attach to ``stream`` and return its final text (raises its error).

        With ``first_line``, return as soon as the first line is complete (the
        text so far); the stream goes on and its whole answer is cached.
        Cancelling the waiter detaches it; the stream itself goes on until the
        registry decides to cancel it.
        """
        assert stream.task is not None
        stream.waiters += 1
        if stream._grace is not None:
            stream._grace.cancel()
            stream._grace = None
        try:
            if first_line and stream.first_line is not None:
                return await asyncio.shield(stream.first_line)
            return await asyncio.shield(stream.task)
        finally:
            stream.waiters -= 1
            if stream.waiters == 0 and not stream.task.done():
                self._start_grace(stream)

    def _start_grace(self, stream: InflightStream) -> None:
        """Cancel ``stream`` after the grace unless someone attaches.

        Only where a cancel stops the prompt's evaluation at once (a remote
        service): on a local server a stream the user may still type into
        costs at most its bounded generation, and its answer warms the cache
        and may serve the next keystroke; it is given up only when the user
        moves away from it (``cancel_diverged``).
        """
        if stream._grace is not None or stream.doomed or not self.cost().cancel_saves_prompt:
            return
        loop = asyncio.get_running_loop()
        stream._grace = loop.call_later(self._grace, self._cancel, stream, "idle")

    def at_service(self) -> bool:
        """Whether any stream is still at the service (doomed ones included)."""
        return any(
            stream.task is not None and not stream.task.done()
            for streams in self._by_anchor.values()
            for stream in streams
        )

    def busy(self, uri: str) -> InflightStream | None:
        """A stream of ``uri`` still at the service (doomed ones included), if any."""
        for streams in self._by_anchor.values():
            for stream in streams:
                if stream.uri == uri and stream.task is not None and not stream.task.done():
                    return stream
        return None

    def cancel_diverged(
        self, uri: str, line_prefix: str, anchor: LineAnchor, line: int = -1
    ) -> None:
        """Give up unattended streams of ``uri`` that can no longer serve the user.

        Cancelled at once, or doomed (closed at their first token) where a
        cancel would not stop the prompt's evaluation (``transport.cost``).
        """
        for streams in list(self._by_anchor.values()):
            for stream in list(streams):
                if stream.uri != uri or stream.waiters or stream.doomed:
                    continue
                if stream.anchor == anchor and stream.consistent_with(line_prefix):
                    continue
                if stream.predicted is not None and _on_the_way(
                    stream.predicted, line, line_prefix
                ):
                    continue
                self._give_up(stream)

    def _give_up(self, stream: InflightStream) -> None:
        if stream.generating or self.cost().cancel_saves_prompt:
            self._cancel(stream, "moved")
            return
        logger.debug("upstream stream for %s doomed: closed at its first token", stream.uri)
        stream.doomed = True
        self.doomed_upstream += 1
        if stream._grace is not None:
            stream._grace.cancel()
            stream._grace = None

    def speculating(self, uri: str) -> bool:
        """Whether a speculative stream of ``uri`` is running."""
        return any(
            s.uri == uri and s.predicted is not None
            for streams in self._by_anchor.values()
            for s in streams
        )

    def cancel_document(self, uri: str) -> None:
        """Cancel every stream of a closed document."""
        for streams in list(self._by_anchor.values()):
            for stream in list(streams):
                if stream.uri == uri:
                    self._cancel(stream, "closed")

    def _cancel(self, stream: InflightStream, reason: str) -> None:
        if stream.task is not None and not stream.task.done():
            logger.debug("cancelling upstream stream for %s (%s)", stream.uri, reason)
            self._count_cancel(stream, reason)
            stream.task.cancel()
        self._forget(stream)

    def _count_cancel(self, stream: InflightStream, reason: str) -> None:
        stream.cancelled_for = reason
        self.cancelled_upstream += 1
        self.cancelled_by[reason] = self.cancelled_by.get(reason, 0) + 1
        self.wasted_chars += len(stream.text)

    def cancel_all(self) -> None:
        """Cancel everything (shutdown)."""
        for streams in list(self._by_anchor.values()):
            for stream in list(streams):
                self._cancel(stream, "stopped")


def _on_the_way(predicted: tuple[int, str], line: int, line_prefix: str) -> bool:
    """The user is still typing the predicted line, or has reached the next one."""
    predicted_line, text = predicted
    return (line == predicted_line and text.startswith(line_prefix)) or line == predicted_line + 1


def _has_complete_line(text: str) -> bool:
    """A line with something on it is complete (a newline follows it)."""
    end = text.rfind("\n")
    return end > 0 and bool(text[:end].strip())


def _resolve(future: asyncio.Future[str] | None, text: str) -> None:
    if future is not None and not future.done():
        future.set_result(text)


def _fail(future: asyncio.Future[str] | None, exc: BaseException) -> None:
    if future is None or future.done():
        return
    if isinstance(exc, asyncio.CancelledError):
        future.cancel()
    elif isinstance(exc, Exception):
        future.set_exception(exc)
        future.exception()  # retrieved: a stream nobody waits for must not warn
    else:
        future.cancel()


def _settle(task: asyncio.Future[str]) -> None:
    if not task.cancelled() and (error := task.exception()) is not None:
        logger.debug("in-flight stream failed: %s", error)

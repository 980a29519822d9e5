"""Asking the completion service: one upstream stream, from request to stored answer.

``UpstreamStreams`` starts a stream in four steps, each its own piece:

1. the request: what is sent (``request_for``: the prompt, the bounds the
   answer is streamed under, the other files' context);
2. what is counted: the request in ``ServerStats``, and the answer's times
   in the throttle (``AnswerTimes``), which paces the next misses and sets
   the in-flight grace;
3. sharing with those typing through: the stream is registered with the
   ``InflightRegistry``, where later requests attach to it;
4. the store of the answer: ``AnswerStore``, the one place an answer is
   written to L1 and shared through L2, whether the stream ended (its whole
   text, or "nothing to suggest here") or was cut under the user (the lines
   it finished, marked cut). What a stored entry carries is decided there.

``UpstreamStreams.wait`` turns a stream's failure into the user notice and an
empty answer: an error is never shown as a suggestion and never stored.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from typing import NamedTuple, Protocol

from cache.entry import CachedCompletion
from cache.keys import LineAnchor, ScopeKey
from cache.store import CompletionStore
from lsp_server.completion.bounds import AnswerBounds
from lsp_server.completion.gate import ShowBar
from lsp_server.completion.inflight import InflightRegistry, InflightStream
from lsp_server.completion.notify import UserNotifier
from lsp_server.completion.throttle import MissThrottle
from lsp_server.completion.turns import DocumentTurns
from lsp_server.documents.cross_file import PromptContext
from lsp_server.documents.syntax import SyntaxContext
from lsp_server.observe.metrics import MetricsRegistry, timed_stream
from lsp_server.observe.stats import ServerStats
from lsp_server.settings import CompletionSettings
from transport.backend import CompletionBackend, CompletionRequest
from transport.errors import AuthError, TransportError

logger = logging.getLogger(__name__)


class SharedWrites(Protocol):
    """What the answer store needs of an L2 tier: a write that never raises."""

    async def put(self, entry: CachedCompletion) -> None:
        """Store ``entry`` for other processes (never raises)."""


class UpstreamHost(Protocol):
    """What the streams read of the pipeline, at each use (a test or reload swaps parts)."""

    @property
    def backend(self) -> CompletionBackend | None:
        """The service client (None: no service configured)."""
        ...

    @property
    def store(self) -> CompletionStore:
        """The L1 store."""
        ...

    @property
    def l2(self) -> SharedWrites | None:
        """The shared tier, if any."""
        ...

    @property
    def stats(self) -> ServerStats:
        """The counters ``scopecache/stats`` reports."""
        ...

    @property
    def throttle(self) -> MissThrottle:
        """The miss throttle, which learns the answer times."""
        ...

    @property
    def inflight(self) -> InflightRegistry:
        """The streams in flight."""
        ...

    @property
    def metrics(self) -> MetricsRegistry:
        """The Prometheus registry."""
        ...

    @property
    def clock(self) -> Callable[[], float]:
        """The clock answer times are read from."""
        ...

    @property
    def prompt_context(self) -> Callable[[str], PromptContext] | None:
        """Other files' context sent with a miss in a document."""
        ...

    def bar(self, ctx: SyntaxContext, source: str) -> ShowBar:
        """The bar a suggestion from ``source`` at ``ctx`` must pass to be shown."""
        ...


class AnswerPlace(NamedTuple):
    """Where a stream's answer is stored: the context it was asked for."""

    key: ScopeKey
    anchor: LineAnchor
    line_prefix: str
    #: the line context continuations of a multi-line answer are keyed by
    context: str
    #: ``speculative`` or ``upstream``
    origin: str


class AnswerStore:
    """The store of an upstream answer into L1 and, shared, into L2.

    Every answer a stream produced is written here and nowhere else: a
    finished stream's text (``keep_finished``), a cancelled stream's finished
    lines (``keep_cut``). An error is never stored.
    """

    def __init__(self, host: UpstreamHost) -> None:
        self._host = host
        self._background: set[asyncio.Task[None]] = set()

    def keep_finished(self, stream: InflightStream, place: AnswerPlace) -> None:
        """Store the answer of a stream that ended normally.

        "Nothing to suggest here" is an answer too: it goes to L2 only, so
        other processes sharing it need not ask again (L1 keeps only
        suggestions).
        """
        if not stream.text:
            self.share(
                CachedCompletion(
                    key=place.key,
                    anchor=place.anchor,
                    line_prefix=place.line_prefix,
                    text="",
                    created_at=time.time(),
                    origin=place.origin,
                )
            )
            return
        self._keep(place, stream.text, truncated=stream.truncated, stream=stream)

    def keep_cut(self, stream: InflightStream, place: AnswerPlace) -> None:
        """Keep the lines a cancelled stream finished, marked as cut, in L1 and L2.

        The user moved away from the stream, nobody attached in time, or the
        server stopped: the lines the model finished are still its answer for
        that context (the first may be on screen already), and a window that
        reaches the same state need not ask again. The unfinished line is
        dropped and the entry is ``truncated``, so its end is never taken for
        the end of the model's answer.
        """
        end = stream.text.rfind("\n")
        text = stream.text[:end] if end > 0 else ""
        if not text.strip():
            return
        if self._keep(place, text, truncated=True, stream=stream):
            self._host.stats.cut_answers_kept += 1
            logger.debug("kept %d finished characters of a cut stream for %r", len(text), place.key)

    def _keep(
        self, place: AnswerPlace, text: str, *, truncated: bool, stream: InflightStream
    ) -> bool:
        """Write ``text`` to L1 and share what was stored; False when nothing was.

        The model's confidence in the stream's tokens goes with it, so a
        suggestion served from memory is cut where the fresh one was.
        """
        entry = self._host.store.put(
            place.key,
            place.anchor,
            place.line_prefix,
            text,
            context=place.context,
            origin=place.origin,
            truncated=truncated,
            confidence=stream.confidence(),
        )
        if entry is None:
            return False
        self.share(entry)
        return True

    def share(self, entry: CachedCompletion) -> None:
        """Write ``entry`` to L2 in the background (nothing to do without one)."""
        l2 = self._host.l2
        if l2 is None:
            return
        task = asyncio.ensure_future(l2.put(entry))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def flush(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for answers still being written to L2 (shutdown)."""
        if self._background:
            await asyncio.wait(set(self._background), timeout=timeout)


class AnswerTimes:
    """The answer times one stream teaches the throttle and the in-flight grace."""

    def __init__(self, host: UpstreamHost) -> None:
        self._host = host
        self.started = host.clock()

    def first_line(self, future: asyncio.Future[str]) -> None:
        """The first line is complete: the time the user waited for a suggestion.

        Only an answer counts. A stream cancelled or failed before its first
        line says nothing of the service's speed; counted, a few quick
        cancels would make a slow service look fast, and the pause rule,
        the first-line wait and line-end speculation would switch off.
        """
        if future.cancelled() or future.exception() is not None:
            return
        self._host.throttle.note_answer(self._host.clock() - self.started)

    def full_answer(self) -> None:
        """The stream ended: the time the service took for its whole answer."""
        throttle = self._host.throttle
        throttle.note_full_answer(self._host.clock() - self.started)
        if throttle.full_answer is not None:
            self._host.inflight.adapt_grace(throttle.full_answer)


class UpstreamStreams:
    """Starts the pipeline's upstream streams and waits for their answers."""

    def __init__(
        self,
        host: UpstreamHost,
        *,
        notifier: UserNotifier,
        completion: CompletionSettings,
    ) -> None:
        # The caches, the backend, the throttle and the counters are the host's.
        self._host = host
        self.notifier = notifier
        self.completion = completion
        self.answers = AnswerStore(host)
        self._ids = itertools.count(1)
        #: the service has scored an answer's tokens: the bounds may use its confidence
        self.scored = False
        #: documents whose speculative prefetch waits for the stream at the service to end
        self._waiting_to_speculate: set[str] = set()
        self._speculations: set[asyncio.Task[None]] = set()
        #: speculative prefetches that gave their turn to a miss
        self.speculations_yielded = 0
        #: shut down, or replaced by a pipeline with other settings: start nothing more
        self.stopped = False

    def start(
        self,
        uri: str,
        key: ScopeKey,
        anchor: LineAnchor,
        ctx: SyntaxContext,
        *,
        predicted: tuple[int, str] | None = None,
    ) -> InflightStream:
        """Start an upstream stream whose answer is stored when it ends."""
        host = self._host
        backend = host.backend
        assert backend is not None
        speculative = predicted is not None
        request, bounds = self.request_for(uri, ctx, speculative=speculative)
        place = AnswerPlace(
            key, anchor, ctx.line_prefix, ctx.line_context,
            "speculative" if speculative else "upstream",
        )  # fmt: skip
        self._count_request(speculative)
        times = AnswerTimes(host)

        def on_complete(stream: InflightStream) -> None:
            times.full_answer()
            self.scored = self.scored or bool(stream.scores)
            self.answers.keep_finished(stream, place)

        stream = host.inflight.start(
            predicted=predicted,
            uri=uri,
            anchor=anchor,
            line_prefix=ctx.line_prefix,
            open_stream=lambda: timed_stream(backend, request, host.metrics, host.clock),
            on_complete=on_complete,
            bounds=bounds,
        )
        logger.debug(
            "upstream request %s for %r at line %d%s",
            request.request_id, key, ctx.line, " (speculative)" if speculative else "",
        )  # fmt: skip
        if stream.first_line is not None:
            stream.first_line.add_done_callback(times.first_line)
        if stream.task is not None:
            stream.task.add_done_callback(
                lambda task: self.answers.keep_cut(stream, place) if task.cancelled() else None
            )
        return stream

    def speculate(
        self,
        uri: str,
        key: ScopeKey,
        anchor: LineAnchor,
        ctx: SyntaxContext,
        predicted: tuple[int, str],
        turns: DocumentTurns,
    ) -> None:
        """Start a speculative stream now, or once the document's stream at the service ends.

        Where turns are kept (a server that queues requests, a slow service)
        a second stream of the document would queue behind the first and
        hold up the user's next miss: the prefetch waits for its turn and
        gives up to any miss (``DocumentTurns.after_misses``). The prompt
        was read before this call, while the document was the one ``ctx``
        was taken from.
        """
        if self.stopped:
            return
        ahead = self._host.inflight.busy(uri)
        if not turns.needed or ahead is None:
            self.start(uri, key, anchor, ctx, predicted=predicted)
            return
        self._waiting_to_speculate.add(uri)
        task = asyncio.ensure_future(
            self._speculate_later(uri, key, anchor, ctx, predicted, turns, ahead)
        )
        self._speculations.add(task)
        # a callback, not a ``finally``: a task cancelled before its first step runs no code
        task.add_done_callback(lambda done: self._speculation_ended(uri, done))

    def _speculation_ended(self, uri: str, task: asyncio.Task[None]) -> None:
        self._speculations.discard(task)
        self._waiting_to_speculate.discard(uri)

    async def _speculate_later(
        self,
        uri: str,
        key: ScopeKey,
        anchor: LineAnchor,
        ctx: SyntaxContext,
        predicted: tuple[int, str],
        turns: DocumentTurns,
        ahead: InflightStream,
    ) -> None:
        host = self._host
        if not await turns.after_misses(uri):
            self.speculations_yielded += 1
            logger.debug("speculative prefetch at line %d gave way to a miss", ctx.line)
            return
        if self.stopped or ahead.cancelled_for in ("closed", "stopped"):
            return  # shut down, the document closed, or the service or settings changed
        # The stream that ended may have answered this state already.
        if host.store.lookup(key, anchor, ctx.line_prefix) is not None:
            return
        if host.inflight.find(anchor, ctx.line_prefix) is not None or host.backend is None:
            return
        self.start(uri, key, anchor, ctx, predicted=predicted)

    def waiting_to_speculate(self, uri: str) -> bool:
        """Whether a speculative prefetch of ``uri`` waits for its turn at the service."""
        return uri in self._waiting_to_speculate

    def stop(self) -> None:
        """Start no stream from now on and give up the prefetches waiting for a turn.

        At shutdown, or when other settings replace the pipeline: a prefetch
        that woke after this would ask through a backend that is closed.
        """
        self.stopped = True
        for task in list(self._speculations):
            task.cancel()

    def request_for(
        self, uri: str, ctx: SyntaxContext, *, speculative: bool
    ) -> tuple[CompletionRequest, AnswerBounds]:
        """What is sent for ``ctx``, and the bounds its answer is streamed under."""
        host = self._host
        context = host.prompt_context(uri) if host.prompt_context is not None else PromptContext()
        completion = self.completion
        multiline = completion.multiline and ctx.block_opener
        # Confidence bounds only once the service has shown it scores tokens:
        # one that does not is asked as before. The bar is the one the answer
        # will be shown under (what this developer kept moves it).
        sure = completion.confidence and self.scored
        shown_under = host.bar(ctx, "speculative" if speculative else "upstream") if sure else None
        bounds = AnswerBounds.for_cursor(
            multiline=multiline,
            line_prefix=ctx.line_prefix,
            suffix=ctx.suffix,
            max_generation_ms=completion.max_generation_ms,
            bar=shown_under.min_probability if shown_under else 0.0,
            onward=shown_under.min_onward_probability if shown_under else 0.0,
            run_on=sure and completion.run_on and not ctx.line_suffix.strip(),
        )
        request = CompletionRequest(
            prefix=ctx.prompt_prefix,
            suffix=ctx.prompt_suffix,
            language=ctx.language,
            max_tokens=self.completion.max_tokens,
            temperature=self.completion.temperature,
            stop=tuple(self.completion.stop),
            multiline=multiline or bounds.run_on,
            max_time_ms=self.completion.max_generation_ms,
            indent=bounds.indent,
            request_id=f"r{next(self._ids)}",
            speculative=speculative,
            extra=context.extra,
            filename=context.filename,
            repo_name=context.repo_name,
            document=uri,
            probabilities=self.completion.confidence,
        )
        return request, bounds

    def _count_request(self, speculative: bool) -> None:
        stats = self._host.stats
        stats.upstream_requests += 1
        if speculative:
            stats.speculative_requests += 1

    async def wait(self, stream: InflightStream, *, first_line: bool = False) -> str | None:
        """The text of ``stream``; None when it failed or was cancelled under us.

        ``first_line``: as soon as its first line is complete.
        """
        try:
            text = await self._host.inflight.wait(stream, first_line=first_line)
        except AuthError as exc:
            # No token: completions pause (empty answers) until one can be had.
            self._host.stats.upstream_errors += 1
            self.notifier.problem("auth", f"completions paused, no access token: {exc}")
            return None
        except TransportError as exc:
            self._host.stats.upstream_errors += 1
            self.notifier.problem("upstream", f"completion service failed: {exc}")
            return None
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # this request was cancelled
            # The stream was cancelled under us (the user diverged): no answer.
            return None
        self.notifier.resolved("auth", "access token obtained, completions resumed")
        self.notifier.resolved("upstream", "completion service is answering again")
        return text

    async def flush(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for answers still being written to L2 (shutdown)."""
        await self.answers.flush(timeout)

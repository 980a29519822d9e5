"""The completion pipeline: context -> key -> cache -> in-flight -> L2 -> upstream.

Lookup order for one request (DESIGN.md, "One keystroke, as data"):

1. the L1 store: the exact key, then typed-through (the user typed the start
   of a cached suggestion: serve the rest); the store verifies every entry
   against the current line before returning it;
2. an upstream stream in flight whose prediction the user is typing through:
   attach to it instead of asking again;
3. the shared L2 tier, verified like L1;
4. upstream, after the miss throttle. The answer is stored once, in L1 and
   L2, when the stream finishes normally; errors and cut-off streams are never
   stored.

Whatever is served is checked against the document once more just before it
goes out: if the buffer moved on while we waited, nothing is shown.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from cache.entry import CachedCompletion
from cache.keys import LineAnchor, ScopeKey, fingerprint
from cache.store import CompletionStore, Hit
from lsp_server.inflight import InflightRegistry, InflightStream
from lsp_server.metrics import MetricsRegistry, timed_stream
from lsp_server.notify import UserNotifier
from lsp_server.settings import CompletionSettings
from lsp_server.stats import ServerStats
from lsp_server.syntax import SyntaxContext
from lsp_server.throttle import MissThrottle
from transport.backend import CompletionBackend, CompletionRequest
from transport.errors import AuthError, TransportError

logger = logging.getLogger(__name__)

#: the longest suggestion shown, in lines
MAX_SUGGESTION_LINES = 8


class SharedTier(Protocol):
    """What the pipeline needs of an L2 store."""

    async def get(self, key: ScopeKey) -> CachedCompletion | None:
        """The stored entry for ``key``, or None (never raises)."""

    async def put(self, entry: CachedCompletion) -> None:
        """Store ``entry`` for other processes (never raises)."""


@dataclass(frozen=True, slots=True)
class Suggestion:
    """A suggestion to show at the cursor and where it came from."""

    text: str
    source: str


def keys_for(ctx: SyntaxContext) -> tuple[ScopeKey, LineAnchor]:
    """The exact key and line anchor of a syntax context."""
    suffix_fp = fingerprint(ctx.suffix)
    key = ScopeKey.build(
        language=ctx.language,
        scope_depth=ctx.scope_depth,
        node_type=ctx.node_type,
        parent_type=ctx.parent_type,
        scope_text=ctx.scope_prefix,
        suffix_fp=suffix_fp,
    )
    anchor = LineAnchor.build(language=ctx.language, context=ctx.line_context, suffix_fp=suffix_fp)
    return key, anchor


def _hit_source(hit: Hit) -> str:
    """Where a cache hit's answer came from, as stats count it."""
    return "speculative" if hit.entry.origin == "speculative" else hit.source


def fit_to_line(text: str, line_suffix: str) -> str:
    """Trim what the buffer already has after the cursor, and overlong answers."""
    lines = text.split("\n")[:MAX_SUGGESTION_LINES]
    tail = line_suffix.rstrip()
    if tail and lines[0].endswith(tail):
        lines[0] = lines[0][: len(lines[0]) - len(tail)]
    return "\n".join(lines).rstrip() if len(lines) > 1 else lines[0]


class CompletionPipeline:
    """Answers completion requests from the caches or the completion service."""

    def __init__(
        self,
        *,
        store: CompletionStore,
        backend: CompletionBackend | None,
        stats: ServerStats,
        throttle: MissThrottle,
        inflight: InflightRegistry,
        notifier: UserNotifier,
        completion: CompletionSettings,
        l2: SharedTier | None = None,
        clock: Callable[[], float] = time.perf_counter,
        metrics: MetricsRegistry | None = None,
    ) -> None:
        self.store = store
        self.backend = backend
        self.stats = stats
        self.throttle = throttle
        self.inflight = inflight
        self.notifier = notifier
        self.completion = completion
        self.l2 = l2
        self._clock = clock
        self.metrics = metrics if metrics is not None else MetricsRegistry()
        self._ids = itertools.count(1)
        self._background: set[asyncio.Task[None]] = set()

    async def complete(
        self,
        uri: str,
        ctx: SyntaxContext,
        *,
        still_current: Callable[[], bool],
        method: str = "inline",
    ) -> Suggestion | None:
        """Answer one request; None means "no suggestion"."""
        started = self._clock()
        self.stats.requests += 1
        errors_before = self.stats.upstream_errors
        try:
            suggestion = await self._lookup(uri, ctx)
        except asyncio.CancelledError:
            self.stats.cancelled += 1
            self.metrics.record_request(method, "none", "cancelled", self._clock() - started)
            raise
        latency_ms = (self._clock() - started) * 1000.0
        if suggestion is not None and not still_current():
            # The buffer moved on while we waited: never show a stale suggestion.
            self.stats.rejected_stale += 1
            suggestion = None
        if suggestion is not None:
            text = fit_to_line(suggestion.text, ctx.line_suffix)
            if text:
                self.stats.record_served(suggestion.source, latency_ms)
                self.metrics.record_request(method, suggestion.source, "served", latency_ms / 1e3)
                return Suggestion(text, suggestion.source)
        self.stats.record_empty(latency_ms)
        # An upstream failure during this request (approximate under concurrency).
        failed = suggestion is None and self.stats.upstream_errors > errors_before
        outcome, source = ("error", "upstream") if failed else ("empty", "none")
        self.metrics.record_request(method, source, outcome, latency_ms / 1000.0)
        return None

    async def _lookup(self, uri: str, ctx: SyntaxContext) -> Suggestion | None:
        key, anchor = keys_for(ctx)
        hit = self.store.lookup(key, anchor, ctx.line_prefix)
        if hit is not None:
            return Suggestion(hit.text, _hit_source(hit))
        if self.backend is None:
            return None
        self.inflight.cancel_diverged(uri, ctx.line_prefix, anchor, ctx.line)
        attached = await self._attach(anchor, ctx)
        if attached is not None:
            return attached
        if self.l2 is not None:
            shared = await self._from_l2(key, anchor, ctx)
            if shared is not None:
                return shared
        await self.throttle.wait(at_line_start=ctx.at_line_start)
        # While we waited another request may have filled the cache or started a stream.
        hit = self.store.lookup(key, anchor, ctx.line_prefix)
        if hit is not None:
            return Suggestion(hit.text, _hit_source(hit))
        attached = await self._attach(anchor, ctx)
        if attached is not None:
            return attached
        return await self._upstream(uri, key, anchor, ctx)

    async def _attach(self, anchor: LineAnchor, ctx: SyntaxContext) -> Suggestion | None:
        stream = self.inflight.find(anchor, ctx.line_prefix)
        if stream is None:
            return None
        text = await self._wait(stream)
        typed = stream.typed_since(ctx.line_prefix) or ""
        if text is None or len(text) <= len(typed) or not text.startswith(typed):
            return None
        source = "speculative" if stream.predicted is not None else "inflight"
        return Suggestion(text[len(typed) :], source)

    async def _from_l2(
        self, key: ScopeKey, anchor: LineAnchor, ctx: SyntaxContext
    ) -> Suggestion | None:
        assert self.l2 is not None
        entry = await self.l2.get(key)
        if entry is None:
            return None
        if entry.anchor != anchor or entry.line_prefix != ctx.line_prefix or not entry.text:
            self.stats.rejected_stale += 1
            return None
        self.store.add_entry(entry)
        return Suggestion(entry.text, "l2")

    async def _upstream(
        self, uri: str, key: ScopeKey, anchor: LineAnchor, ctx: SyntaxContext
    ) -> Suggestion | None:
        stream = self._start(uri, key, anchor, ctx)
        text = await self._wait(stream)
        if not text:
            return None
        return Suggestion(text, "upstream")

    def prefetch(self, uri: str, ctx: SyntaxContext, *, predicted: tuple[int, str]) -> bool:
        """Ask upstream in the background for a state the user has not reached yet.

        ``predicted`` is the line the user is typing and its predicted full
        text: the stream lives while the user types towards it. Returns
        False when the answer is cached or already being fetched.
        """
        if self.backend is None:
            return False
        key, anchor = keys_for(ctx)
        if self.store.lookup(key, anchor, ctx.line_prefix) is not None:
            return False
        if self.inflight.find(anchor, ctx.line_prefix) is not None:
            return False
        self._start(uri, key, anchor, ctx, predicted=predicted)
        return True

    def _start(
        self,
        uri: str,
        key: ScopeKey,
        anchor: LineAnchor,
        ctx: SyntaxContext,
        *,
        predicted: tuple[int, str] | None = None,
    ) -> InflightStream:
        """Start an upstream stream whose answer is stored when it ends."""
        assert self.backend is not None
        backend = self.backend
        speculative = predicted is not None
        request = CompletionRequest(
            prefix=ctx.prefix,
            suffix=ctx.suffix,
            language=ctx.language,
            max_tokens=self.completion.max_tokens,
            temperature=self.completion.temperature,
            stop=tuple(self.completion.stop),
            multiline=self.completion.multiline and ctx.block_opener,
            request_id=f"r{next(self._ids)}",
            speculative=speculative,
        )
        started = self._clock()

        def on_complete(stream: InflightStream) -> None:
            self.throttle.note_ttft(self._clock() - started)
            if self.throttle.ttft is not None:
                self.inflight.adapt_grace(self.throttle.ttft)
            if not stream.text:
                return
            entry = self.store.put(
                key,
                anchor,
                ctx.line_prefix,
                stream.text,
                context=ctx.line_context,
                origin="speculative" if speculative else "upstream",
            )
            if entry is not None:
                self._share(entry)

        self.stats.upstream_requests += 1
        if speculative:
            self.stats.speculative_requests += 1
        return self.inflight.start(
            predicted=predicted,
            uri=uri,
            anchor=anchor,
            line_prefix=ctx.line_prefix,
            open_stream=lambda: timed_stream(backend, request, self.metrics, self._clock),
            on_complete=on_complete,
        )

    async def _wait(self, stream: InflightStream) -> str | None:
        try:
            text = await self.inflight.wait(stream)
        except AuthError as exc:
            # No token: completions pause (empty answers) until one can be had.
            self.stats.upstream_errors += 1
            self.notifier.problem("auth", f"completions paused, no access token: {exc}")
            return None
        except TransportError as exc:
            self.stats.upstream_errors += 1
            self.notifier.problem("upstream", f"completion service failed: {exc}")
            return None
        except asyncio.CancelledError:
            if stream.task is not None and stream.task.cancelled():
                # The stream was cancelled under us (the user diverged): no answer.
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
                return None
            raise
        self.notifier.resolved("auth", "access token obtained, completions resumed")
        self.notifier.resolved("upstream", "completion service is answering again")
        return text

    def _share(self, entry: CachedCompletion) -> None:
        if self.l2 is None:
            return
        task = asyncio.ensure_future(self.l2.put(entry))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def clear(self) -> int:
        """Empty L1; returns how many entries were removed."""
        return self.store.clear()

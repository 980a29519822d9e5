"""The completion pipeline: context -> key -> cache -> in-flight -> L2 -> upstream.

Lookup order for one request (DESIGN.md, "One keystroke, as data"):

1. the L1 store: the exact key, then typed-through (the user typed the start
   of a cached suggestion: serve the rest); the store verifies every entry
   against the current line before returning it;
2. an upstream stream in flight whose prediction the user is typing through:
   attach to it instead of asking again (on a slow local server, what it
   has of the line so far is shown at once: ``_line_so_far``);
3. the shared L2 tier, verified like L1 (an entry with empty text records that
   the service had nothing to suggest there: answered empty, not asked again);
4. upstream, after the miss throttle, once the document has no other stream
   at the service (``DocumentTurns``: the newest state goes next)
   (``UpstreamStreams``). The answer is shown as soon as its first line is
   complete, within ``AnswerBounds``, and stored once, in L1 and L2, when the
   stream finishes normally. Errors are never stored; a stream cut off under
   the user keeps only the lines it finished, marked cut (``truncated``).

Whatever is served is checked against the document once more just before it
goes out: if the buffer moved on while we waited, nothing is shown. Then
``gate`` decides what of it is worth showing: cut where the model became
unsure (the probabilities kept with the answer, so a typed-through hit keeps
its cut), without what repeats the text around the cursor; what is held back
is counted by reason (``ServerStats.held_back``). The bar to show comes from
``show_bar`` (language, scope kind, source), the seam where what the
developer kept adjusts it.

``complete_now`` answers an L1 hit in the same call, without an ``await``
(the server writes it out in the loop iteration that read the request); for
a miss it does what must see the request's document (the prompt windows,
the streams it diverged from) and returns the rest of the way as ``Pending``.

A speculative prefetch looks in the same places before it asks upstream: L1,
the streams in flight, then the shared L2 (in the background, so the answer
that triggered it is not delayed). An answer another process already fetched
is copied into L1 and counted in ``ServerStats.speculative_l2_prefetches``;
serving it later counts ``speculative_l2_served``. A prefetch that may not
ask (the suggestion before it came from L2, see ``speculate``) stops there
(``speculative_l2_unanswered``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import NamedTuple, Protocol

from cache.entry import CachedCompletion, Confidence
from cache.keys import LineAnchor, RecentFingerprint, ScopeKey
from cache.store import CompletionStore, Hit
from lsp_server.completion.bounds import MAX_SUGGESTION_LINES
from lsp_server.completion.gate import (
    LOW_KEPT,
    BarSource,
    ShowBar,
    Surroundings,
    Verdict,
    configured_bar,
    gate,
    line_above_of,
    next_line_of,
    without_line_suffix,
)
from lsp_server.completion.inflight import InflightRegistry, InflightStream
from lsp_server.completion.mid_line import position_allowed, suggestion_allowed
from lsp_server.completion.notify import UserNotifier
from lsp_server.completion.pending import Pending
from lsp_server.completion.throttle import MissThrottle, in_first_word
from lsp_server.completion.turns import DocumentTurns
from lsp_server.completion.upstream import UpstreamStreams
from lsp_server.documents.cross_file import PromptContext
from lsp_server.documents.syntax import SyntaxContext
from lsp_server.observe.metrics import MetricsRegistry
from lsp_server.observe.stats import ServerStats
from lsp_server.settings import CompletionSettings
from transport.backend import CompletionBackend

logger = logging.getLogger(__name__)

__all__ = ["MAX_SUGGESTION_LINES", "CompletionPipeline", "Suggestion", "keys_for"]


class SharedTier(Protocol):
    """What the pipeline needs of an L2 store."""

    async def get(self, key: ScopeKey) -> CachedCompletion | None:
        """The stored entry for ``key`` (marked ``from_l2``), or None (never raises)."""

    async def put(self, entry: CachedCompletion) -> None:
        """Store ``entry`` for other processes (never raises)."""


class Suggestion(NamedTuple):
    """A suggestion to show at the cursor and where it came from (one per answer)."""

    text: str
    source: str
    #: a speculative answer another process fetched (counted as speculativeL2.served)
    shared_speculative: bool = False
    #: the answer came from the shared tier: another process may have fetched it
    from_l2: bool = False
    #: how sure the model was of ``text`` (None: the service did not say)
    confidence: Confidence | None = None
    #: the gate ended ``text`` inside the first line of the answer it was
    #: cut from: the line goes on past it (no prefetch of the line after)
    line_cut: bool = False


#: (uri, context, the answer as found, the text around the cursor, what the gate made of it)
AnswerWatcher = Callable[[str, SyntaxContext, Suggestion, Surroundings, Verdict], None]


def cut_in_first_line(shown: str, found: str) -> bool:
    """Whether ``shown``, what the gate made of ``found``, ends inside ``found``'s first line."""
    if "\n" in shown:
        return False
    line_end = found.find("\n")
    return len(shown) < (line_end if line_end >= 0 else len(found))


def scope_kind_of(ctx: SyntaxContext) -> str:
    """The innermost scope's node type at the cursor (``text`` without a tree)."""
    return ctx.scope_chain[-1] if ctx.scope_chain else "text"


#: ``keys_for``'s memory: while the user types on a line, the text before it and
#: the suffix are those of the keystroke before (fingerprinted once), and a
#: context asked again (``completion_context``'s memo) has the keys made then
_suffix_fp = RecentFingerprint()
_line_fp = RecentFingerprint()
_last_keys: tuple[SyntaxContext | None, tuple[ScopeKey, LineAnchor]] = (
    None,
    (ScopeKey("", "", 0, 0), LineAnchor("", 0, 0)),
)


def keys_for(ctx: SyntaxContext) -> tuple[ScopeKey, LineAnchor]:
    """The exact key and line anchor of a syntax context.

    Both cover the suffix and the enclosing scopes' first lines through one
    fingerprint (the same for a multi-line answer's continuations): two
    identical nested scopes in different functions get different keys.
    """
    global _last_keys
    last_ctx, last_keys = _last_keys
    if last_ctx is ctx:
        return last_keys  # the same context asked again (an editor's repeated request)
    heads = ctx.scope_heads
    suffix_fp = _suffix_fp(f"{heads}\0{ctx.suffix}" if heads else ctx.suffix)
    key = ScopeKey.build(
        language=ctx.language,
        scope_depth=ctx.scope_depth,
        node_type=ctx.node_type,
        parent_type=ctx.parent_type,
        scope_text=ctx.scope_prefix,
        suffix_fp=suffix_fp,
    )
    anchor = LineAnchor.build(
        language=ctx.language, context=ctx.line_context, suffix_fp=suffix_fp, hasher=_line_fp
    )
    _last_keys = ctx, (key, anchor)
    return key, anchor


#: the origin of a speculative answer another process fetched, found in L2 by a prefetch
SPECULATIVE_FROM_L2 = "speculative-l2"


def _hit_source(hit: Hit) -> str:
    """Where a cache hit's answer came from, as stats count it."""
    if hit.entry.origin in ("speculative", SPECULATIVE_FROM_L2):
        return "speculative"
    return hit.source


class _Request(NamedTuple):
    """One request on its way through the pipeline, as the lookup found it.

    A named tuple: one is built per request, in one step.
    """

    uri: str
    ctx: SyntaxContext
    key: ScopeKey
    anchor: LineAnchor
    method: str
    still_current: Callable[[], bool]
    started: float
    #: the upstream error count when the request arrived
    errors_before: int
    #: called when the service answers that the line is complete (``complete``)
    line_done: Callable[[], None] | None = None


def fit_to_line(text: str, line_suffix: str) -> str:
    """Trim what the buffer already has after the cursor, and overlong answers."""
    lines = text.split("\n")[:MAX_SUGGESTION_LINES]
    lines[0] = without_line_suffix(lines[0], line_suffix)
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
        prompt_context: Callable[[str], PromptContext] | None = None,
        source_muted: Callable[[str], bool] | None = None,
        show_bar: BarSource | None = None,
        on_answer: AnswerWatcher | None = None,
    ) -> None:
        self.store = store
        self.backend = backend
        self.stats = stats
        self.throttle = throttle
        self.inflight = inflight
        self.l2 = l2
        self.clock = clock
        self.metrics = metrics if metrics is not None else MetricsRegistry()
        #: other files' chunks and names sent with a miss in a document
        self.prompt_context = prompt_context
        self.completion = completion
        #: whether suggestions from a source are withheld now (``acceptance.muteBelow``)
        self.source_muted = source_muted
        #: the bar a suggestion must pass, by language, scope kind and source
        #: (None: ``completion.minProbability`` everywhere)
        self.show_bar = show_bar
        #: told every answer the gate judged (a trace recorder keeps them to score bars on)
        self.on_answer = on_answer
        self.upstream = UpstreamStreams(self, notifier=notifier, completion=completion)
        self.turns = DocumentTurns(
            inflight, needed=lambda: inflight.cost().queues_requests or throttle.slow
        )
        #: documents whose speculative prefetch is looking in L2 right now
        self._prefetching: set[str] = set()
        self._prefetch_tasks: set[asyncio.Task[None]] = set()

    def complete_now(
        self,
        uri: str,
        ctx: SyntaxContext,
        *,
        still_current: Callable[[], bool],
        method: str = "inline",
        line_done: Callable[[], None] | None = None,
    ) -> Suggestion | None | Pending[Suggestion | None]:
        """Answer one request at once when no waiting is needed; None means "no suggestion".

        An L1 hit, or a request that nothing could be shown for, is answered
        here. Anything else returns ``Pending``: the rest of the lookup (the
        streams in flight, L2, upstream) for the caller to await. Everything
        that must see the document as the request found it (the prompt
        windows, the streams it diverged from) is done before returning.
        """
        started = self.clock()
        self.stats.requests += 1
        self.stats.requests_by_language[ctx.language] += 1
        if not position_allowed(self.completion.mid_line, ctx.line_suffix):
            # completion.midLine = "never" with text after the cursor: nothing could show.
            self.stats.mid_line_suppressed += 1
            self.stats.record_empty((self.clock() - started) * 1000.0)
            self.metrics.record_request(method, "none", "empty", self.clock() - started)
            return None
        key, anchor = keys_for(ctx)
        request = _Request(
            uri, ctx, key, anchor, method, still_current, started, self.stats.upstream_errors,
            line_done,
        )
        hit = self._l1(key, anchor, ctx)
        if hit is not None or self.backend is None:
            return self._finish(request, hit)
        # A miss: read the prompt windows now, before the first wait, while
        # the document is still the one this context was taken from.
        self._read_prompt(ctx)
        self.inflight.cancel_diverged(uri, ctx.line_prefix, anchor, ctx.line)
        return Pending(self._complete_later(request))

    async def complete(
        self,
        uri: str,
        ctx: SyntaxContext,
        *,
        still_current: Callable[[], bool],
        method: str = "inline",
        line_done: Callable[[], None] | None = None,
    ) -> Suggestion | None:
        """Answer one request, waiting where needed; None means "no suggestion".

        ``line_done`` is called when the service, asked at the end of a line,
        answered that nothing more comes on it.
        """
        answer = self.complete_now(
            uri, ctx, still_current=still_current, method=method, line_done=line_done
        )
        return await answer.rest if isinstance(answer, Pending) else answer

    async def _complete_later(self, request: _Request) -> Suggestion | None:
        try:
            suggestion = await self._lookup_beyond_l1(request)
        except asyncio.CancelledError:
            self.stats.cancelled += 1
            elapsed = self.clock() - request.started
            self.metrics.record_request(request.method, "none", "cancelled", elapsed)
            raise
        return self._finish(request, suggestion)

    def _finish(self, request: _Request, suggestion: Suggestion | None) -> Suggestion | None:
        """Check what was found against the buffer, count it, and fit it to the line."""
        latency_ms = (self.clock() - request.started) * 1000.0
        mid_line, method = self.completion.mid_line, request.method
        line_suffix = request.ctx.line_suffix
        if suggestion is not None and not request.still_current():
            # The buffer moved on while we waited: never show a stale suggestion.
            self.stats.rejected_stale += 1
            suggestion = None
        if suggestion is not None and not suggestion_allowed(
            mid_line, line_suffix, suggestion.text
        ):
            # Text after the cursor that the suggestion would be wedged in front of.
            self.stats.mid_line_suppressed += 1
            suggestion = None
        if (
            suggestion is not None
            and self.source_muted is not None
            and self.source_muted(suggestion.source)
        ):
            # its source's suggestions were kept too little: stay silent
            self.stats.held_back[LOW_KEPT] += 1
            suggestion = None
        if suggestion is not None:
            text = self._shown(suggestion, request)
            if text:
                self.stats.record_served(suggestion.source, latency_ms)
                if suggestion.shared_speculative:
                    self.stats.speculative_l2_served += 1
                self.metrics.record_request(method, suggestion.source, "served", latency_ms / 1e3)
                if text == suggestion.text and not suggestion.shared_speculative:
                    return suggestion  # already what goes out (its from_l2 mark included)
                return Suggestion(
                    text,
                    suggestion.source,
                    from_l2=suggestion.from_l2,
                    line_cut=cut_in_first_line(text, suggestion.text),
                )
        self.stats.record_empty(latency_ms)
        # An upstream failure during this request (approximate under concurrency).
        failed = suggestion is None and self.stats.upstream_errors > request.errors_before
        outcome, source = ("error", "upstream") if failed else ("empty", "none")
        self.metrics.record_request(method, source, outcome, latency_ms / 1000.0)
        return None

    def bar(self, ctx: SyntaxContext, source: str) -> ShowBar:
        """The bar ``source``'s suggestion at ``ctx`` must pass."""
        if self.show_bar is not None:
            return self.show_bar(ctx.language, scope_kind_of(ctx), source)
        return configured_bar(self.completion)

    def _shown(self, suggestion: Suggestion, request: _Request) -> str:
        """What of ``suggestion`` goes out at the request's cursor ("" if nothing; counted why)."""
        ctx = request.ctx
        around = Surroundings(
            ctx.line_prefix, ctx.line_suffix, next_line_of(ctx.suffix),
            line_above_of(ctx.line_context), ctx.strings,
        )  # fmt: skip
        bar = self.bar(ctx, suggestion.source)
        verdict = gate(suggestion.text, suggestion.confidence, bar, around)
        if verdict.held_back is not None:
            self.stats.held_back[verdict.held_back] += 1
        if self.on_answer is not None:
            self.on_answer(request.uri, ctx, suggestion, around, verdict)
        return verdict.text

    async def _lookup_beyond_l1(self, request: _Request) -> Suggestion | None:
        """After an L1 miss: the streams in flight, L2, then upstream after the throttle."""
        uri, ctx, key, anchor = request.uri, request.ctx, request.key, request.anchor
        attached = await self._attach(anchor, ctx)
        if attached is not None:
            return attached
        if self.l2 is not None:
            shared = await self._from_l2(key, anchor, ctx)
            if shared is not None:
                return shared
        await self.throttle.wait(
            at_line_start=ctx.at_line_start, uri=uri, indentation=ctx.at_line_start,
            service_idle=self.idle_local_server(), first_word=in_first_word(ctx.line_prefix),
        )  # fmt: skip
        if not await self.turns.take(uri):
            return None  # a newer state of the document goes instead
        # While we waited another request may have filled the cache or started a stream.
        hit = self._l1(key, anchor, ctx)
        if hit is not None:
            return hit
        attached = await self._attach(anchor, ctx)
        if attached is not None:
            return attached
        return await self._upstream(uri, key, anchor, ctx, request.line_done)

    def _first_line(self, stream: InflightStream) -> bool:
        """Whether to answer at ``stream``'s first line rather than at its end.

        On a slow service, always; an answer that runs on past its line
        (``AnswerBounds.run_on``) never holds up the line it was asked for.
        """
        return self.throttle.slow or (stream.bounds is not None and stream.bounds.run_on)

    def _line_so_far(self, stream: InflightStream, line_prefix: str) -> bool:
        """Whether to show ``stream``'s line as it is now rather than once it is complete.

        On a slow local server, to a developer who typed through the start
        of what the stream produced (the model was right so far): they see
        the rest so far at once, not when the model reaches the newline,
        which often comes after their next key. Nothing more is asked of the
        server. With nothing typed through, or on a remote service (whose
        unattended streams are given up after a grace), the request waits
        for the line.
        """
        typed = stream.typed_since(line_prefix)
        if not typed or stream.finished or not self.throttle.slow:
            return False
        if self.inflight.cost().cancel_saves_prompt:
            return False
        ahead = stream.text[len(typed) :]
        return stream.text.startswith(typed) and bool(ahead.strip()) and "\n" not in ahead

    def idle_local_server(self) -> bool:
        """Whether the service is a local server with none of our streams at it.

        A local server (llama.cpp, Ollama: few slots, ``transport.cost``)
        that is idle costs nothing to ask: on a slow one the newest state
        goes at once instead of waiting for a pause in the typing. A hosted
        service is not idle for us to use: each request is billed and
        rate-limited, so there a slow answer still means waiting for a pause.
        """
        return self.inflight.cost().queues_requests and not self.inflight.at_service()

    def _read_prompt(self, ctx: SyntaxContext) -> None:
        """Read what a miss sends, its prefix within what the backend sends of one."""
        ctx.prompt.texts(self.backend.prompt_prefix_chars() if self.backend is not None else None)

    def _l1(self, key: ScopeKey, anchor: LineAnchor, ctx: SyntaxContext) -> Suggestion | None:
        hit = self.store.lookup(key, anchor, ctx.line_prefix)
        if hit is None:
            return None
        entry = hit.entry
        shared = entry.origin == SPECULATIVE_FROM_L2
        confidence = entry.confidence
        if confidence is not None and len(hit.text) < len(entry.text):
            confidence = confidence.after(len(entry.text) - len(hit.text))  # typed through
        return Suggestion(
            hit.text, _hit_source(hit), shared_speculative=shared, from_l2=entry.from_l2,
            confidence=confidence,
        )  # fmt: skip

    async def _attach(self, anchor: LineAnchor, ctx: SyntaxContext) -> Suggestion | None:
        stream = self.inflight.find(anchor, ctx.line_prefix)
        if stream is None:
            return None
        text: str | None
        if self._line_so_far(stream, ctx.line_prefix):
            text = stream.text  # typed through while its line is still coming
        else:
            text = await self.upstream.wait(stream, first_line=self._first_line(stream))
        typed = stream.typed_since(ctx.line_prefix) or ""
        if text is None or len(text) <= len(typed) or not text.startswith(typed):
            return None
        source = "speculative" if stream.predicted is not None else "inflight"
        confidence = stream.confidence()
        if confidence is not None:
            confidence = confidence.after(len(typed))
        return Suggestion(text[len(typed) :], source, confidence=confidence)

    async def _from_l2(
        self, key: ScopeKey, anchor: LineAnchor, ctx: SyntaxContext
    ) -> Suggestion | None:
        assert self.l2 is not None
        entry = await self.l2.get(key)
        if entry is None:
            logger.debug("L2 miss for %r", key)
            return None
        if entry.anchor != anchor or entry.line_prefix != ctx.line_prefix:
            logger.debug("L2 entry for %r answers another context", key)
            self.stats.rejected_stale += 1
            return None
        # An empty text is a stored "nothing to suggest here": answered, not asked again.
        self.store.add_entry(entry)
        return Suggestion(entry.text, "l2", from_l2=True, confidence=entry.confidence)

    async def _upstream(
        self,
        uri: str,
        key: ScopeKey,
        anchor: LineAnchor,
        ctx: SyntaxContext,
        line_done: Callable[[], None] | None = None,
    ) -> Suggestion | None:
        if self.upstream.stopped:
            return None  # a request still waiting when the server shut down
        stream = self.upstream.start(uri, key, anchor, ctx)
        text = await self.upstream.wait(stream, first_line=self._first_line(stream))
        if text == "" and line_done is not None and ctx.line_prefix.strip():
            if not ctx.line_suffix.strip():
                line_done()
        if not text:
            return None
        return Suggestion(text, "upstream", confidence=stream.confidence())

    def prefetch(
        self, uri: str, ctx: SyntaxContext, *, predicted: tuple[int, str], ask: bool = True
    ) -> bool:
        """Fetch in the background the answer for a state the user has not reached yet.

        ``predicted`` is the line the user is typing and its predicted full
        text: an upstream stream lives while the user types towards it.
        Looks in L1, the streams in flight, and (in the background) the shared
        L2 first; only with ``ask`` does a miss there go to the service.
        Returns False when the answer is cached or already being fetched, or
        there is nowhere to look.
        """
        if self.backend is None or self.upstream.stopped or (not ask and self.l2 is None):
            return False
        key, anchor = keys_for(ctx)
        if self.store.lookup(key, anchor, ctx.line_prefix) is not None:
            logger.debug("speculative prefetch at line %d for %r: in L1", ctx.line, key)
            return False
        if self.inflight.find(anchor, ctx.line_prefix) is not None:
            logger.debug("speculative prefetch at line %d for %r: in flight", ctx.line, key)
            return False
        self._read_prompt(ctx)  # before the L2 lookup below lets the document change
        if self.l2 is None:
            self.upstream.speculate(uri, key, anchor, ctx, predicted, self.turns)
            return True
        self._prefetching.add(uri)
        task = asyncio.ensure_future(
            self._prefetch_shared(uri, key, anchor, ctx, predicted, ask=ask)
        )
        self._prefetch_tasks.add(task)
        # a callback, not a ``finally``: a task cancelled before its first step runs no code
        task.add_done_callback(lambda done: self._prefetch_ended(uri, done))
        return True

    def _prefetch_ended(self, uri: str, task: asyncio.Task[None]) -> None:
        self._prefetch_tasks.discard(task)
        self._prefetching.discard(uri)

    def stop(self) -> None:
        """Ask the service nothing more (shutdown, settings replaced the pipeline).

        The prefetches looking in L2 or waiting for a turn are given up; the
        streams already at the service are the in-flight registry's to cancel.
        """
        self.upstream.stop()
        for task in list(self._prefetch_tasks):
            task.cancel()

    def speculating(self, uri: str) -> bool:
        """Whether a speculative prefetch of ``uri`` is under way (L2 lookup, turn or stream)."""
        return (
            uri in self._prefetching
            or self.inflight.speculating(uri)
            or self.upstream.waiting_to_speculate(uri)
        )

    async def _prefetch_shared(
        self,
        uri: str,
        key: ScopeKey,
        anchor: LineAnchor,
        ctx: SyntaxContext,
        predicted: tuple[int, str],
        *,
        ask: bool,
    ) -> None:
        assert self.l2 is not None
        entry = await self.l2.get(key)
        if entry is not None and entry.anchor == anchor and entry.line_prefix == ctx.line_prefix:
            # an empty text: another process learnt there is nothing to suggest
            origin = SPECULATIVE_FROM_L2 if entry.origin == "speculative" else entry.origin
            self.store.add_entry(dataclasses.replace(entry, origin=origin))
            self.stats.speculative_l2_prefetches += 1
            return
        logger.debug(
            "speculative prefetch at line %d for %r: %s in L2",
            ctx.line,
            key,
            "no entry" if entry is None else "a different context",
        )
        if not ask:
            self.stats.speculative_l2_unanswered += 1
            return
        # While we looked, a request may have filled L1 or started a stream.
        if self.store.lookup(key, anchor, ctx.line_prefix) is not None:
            return
        if self.inflight.find(anchor, ctx.line_prefix) is not None:
            return
        if self.backend is not None:
            self.upstream.speculate(uri, key, anchor, ctx, predicted, self.turns)

    def clear(self) -> int:
        """Empty L1; returns how many entries were removed."""
        return self.store.clear()

"""``TimedRun``: one client design played over a trace's requests in trace time.

An event queue (arrivals, supersessions, debounce and throttle timers,
first lines, first tokens, stream ends, grace timers) ordered by time and
insertion; everything else is the ``ClientModel``'s rules, described in
``model``, and for ``ours`` the speculative prefetch's rules in
``speculation``. Deterministic: no wall clock, no randomness.

``ours`` plays the server's slow-path policy (``ClientModel.slow_path``)
with the same pieces the server uses where they are pure: the
``MissThrottle`` (pacing, the slow rule, the idle rule through
``service_idle``) and the service's ``ServiceCost``; the turns (one stream
per document at the service, the newest state next, a prefetch after any
miss) and doomed streams are the rules of ``completion.turns`` and
``completion.inflight`` in trace time.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from cache.keys import LineAnchor
from lsp_server.completion.inflight import MAX_GRACE
from lsp_server.completion.throttle import in_first_word
from lsp_server.kit.simulate.strategies import SimRequest
from lsp_server.kit.simulate.timed.model import (
    CODY_DEBOUNCE,
    CODY_PROMOTE_GAP,
    ClientModel,
    LatencyModel,
    Stream,
    TimedResult,
)
from lsp_server.kit.simulate.timed.speculation import SpeculationRules
from transport.cost import REMOTE_SERVICE, ServiceCost

logger = logging.getLogger(__name__)


class TimedRun:
    """Play one ``ClientModel`` over the requests, in trace time, with a cache design.

    ``next_t[i]`` is the time of the next event in request ``i``'s document;
    ``prefetch[i]`` the post-accept request of request ``i`` (speculative
    designs only); ``throttle`` a ``MissThrottle`` on this run's clock.
    """

    def __init__(
        self,
        model: ClientModel,
        requests: Sequence[SimRequest],
        next_t: Sequence[float],
        latency: LatencyModel,
        cache: Any,
        *,
        fit: Callable[[str, str], str],
        prefetch: dict[int, SimRequest] | None = None,
        throttle: Any = None,
        max_per_minute: int = 30,
        cost: ServiceCost = REMOTE_SERVICE,
    ) -> None:
        self.model, self.requests, self.next_t = model, requests, next_t
        self.latency, self.cache, self.fit = latency, cache, fit
        self.speculation = SpeculationRules(prefetch or {}, max_per_minute)
        self.throttle = throttle
        self.now = 0.0
        self.result = TimedResult(design=model.name, ttft_ms=latency.ttft * 1000.0)
        self._queue: list[tuple[float, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = itertools.count()
        self._current: dict[str, int] = {}
        self._streams: dict[str, list[Stream]] = {}
        self._waiting: dict[int, Stream] = {}
        self._answered: list[float | None] = [None] * len(requests)
        self._recent: dict[str, deque[Stream]] = {}
        self._finished: list[Stream] = []
        self._last_promoted = -math.inf
        #: the service's cost model: doomed streams, the idle grace, turns
        self.cost = cost
        #: per document, the newest miss waiting for the stream at the service to end
        self._turn_waiting: dict[str, SimRequest] = {}
        #: per document, a prefetch waiting for its turn (it yields to any miss)
        self._prefetch_waiting: dict[str, tuple[SimRequest, SimRequest, Any]] = {}
        #: per document, the line of its last request (a new line means Enter was pressed)
        self._last_line: dict[str, int] = {}

    # -- the event loop ------------------------------------------------------------

    def _at(self, when: float, action: Callable[..., None], *args: Any) -> None:
        heapq.heappush(self._queue, (when, next(self._seq), action, args))

    def run(self) -> TimedResult:
        """Play every request; returns the counts."""
        for req in self.requests:
            self._at(req.t, self._arrive, req)
            if math.isfinite(self.next_t[req.index]):
                self._at(self.next_t[req.index], self._supersede, req)
        while self._queue:
            self.now, _, action, args = heapq.heappop(self._queue)
            action(*args)
        self.result.settle(self.requests, self._answered, self._finished)
        return self.result

    def _live(self, req: SimRequest) -> bool:
        return self._current.get(req.uri) == req.index and self.now < self.next_t[req.index]

    # -- a request's life --------------------------------------------------------------

    def _arrive(self, req: SimRequest) -> None:
        self._current[req.uri] = req.index
        if self.throttle is not None:
            new_line = req.at_line_start and self._last_line.get(req.uri, req.line) != req.line
            self.throttle.note_keystroke(req.uri, new_line=new_line)
        self._last_line[req.uri] = req.line
        if self.model.speculative:
            self._cancel_diverged_prefetch(req)
        if self.model.debounce > 0:
            self._at(self.now + self.model.debounce, self._look, req)
        else:
            self._look(req)

    def _supersede(self, req: SimRequest) -> None:
        stream = self._waiting.pop(req.index, None)
        if stream is not None:
            stream.waiters.discard(req.index)
            stream.first_line_waiters.discard(req.index)
            grace = self._grace_seconds()
            if stream.alive and not stream.waiters and grace is not None:
                if self._grace_applies(stream):
                    stream.grace_token += 1
                    self._at(self.now + grace, self._grace, stream, stream.grace_token)
        if self.model.cancel_on_keystroke:
            for other in list(self._streams.get(req.uri, ())):
                self._cancel(other)

    def _look(self, req: SimRequest) -> None:
        if not self._live(req):
            return
        cached = self.cache.serve(req)
        if cached is not None:
            self._hit(req, cached)
            return
        self._drop_inconsistent(req)
        stream = self._find(req)
        if stream is not None and self.model.attach:
            self._attach(req, stream)
            return
        if stream is not None and self.model.wait_consistent > 0:
            self._attach(req, stream)
            self._at(self.now + self.model.wait_consistent, self._give_up, req, stream)
            return
        delay = 0.0
        if self.model.throttle == "adaptive" and self.model.slow_path:
            delay = self.throttle.delay_for(
                at_line_start=req.at_line_start, uri=req.uri, indentation=req.at_line_start,
                service_idle=self.cost.queues_requests and not self._at_service(),
                first_word=in_first_word(req.line_prefix),
            )  # fmt: skip
        elif self.model.throttle == "adaptive":
            delay = self.throttle.delay_for(at_line_start=req.at_line_start)
        elif self.model.throttle == "cody" and not req.at_line_start:
            delay = CODY_DEBOUNCE
        if delay > 0:
            self._at(self.now + delay, self._send, req)
        else:
            self._send(req)

    def _send(self, req: SimRequest, promoted: bool = False) -> None:
        if not self._live(req):
            return
        if self.model.throttle == "cody" and not req.at_line_start and not promoted:
            gate = self._last_promoted + CODY_PROMOTE_GAP
            if self.now < gate:
                self._at(gate, self._send, req, True)
                return
        if self.model.throttle != "none":
            # while the request waited, the cache or a new stream may have the answer
            cached = self.cache.serve(req)
            if cached is not None:
                self._hit(req, cached)
                return
            stream = self._find(req)
            if stream is not None and self.model.attach:
                self._attach(req, stream)
                return
        if self.model.throttle == "cody" and not req.at_line_start:
            self._last_promoted = self.now
        if self._turns_needed() and self._busy(req.uri):
            # the newest state goes next; an older one waiting gives up
            self._turn_waiting[req.uri] = req
            return
        self._start(req, req)

    # -- turns at the service (ours) ---------------------------------------------------

    def _turns_needed(self) -> bool:
        if not self.model.slow_path:
            return False
        return self.cost.queues_requests or (self.throttle is not None and self.throttle.slow)

    def _busy(self, uri: str) -> bool:
        """A stream of ``uri`` is at the service (doomed ones included)."""
        return any(s.alive for s in self._streams.get(uri, ()))

    def _at_service(self) -> bool:
        return any(s.alive for streams in self._streams.values() for s in streams)

    def _turn_free(self, uri: str) -> None:
        """A stream of ``uri`` left the service: the newest waiting miss goes, else a prefetch."""
        if self._busy(uri):
            return
        req = self._turn_waiting.pop(uri, None)
        waiting_prefetch = self._prefetch_waiting.pop(uri, None)
        if req is not None and not self._live(req):
            req = None  # the editor gave it up: its turn is free
        if req is not None:
            # the stream that ended may answer it by typed-through
            cached = self.cache.serve(req)
            if cached is not None:
                self._hit(req, cached)
                return
            stream = self._find(req)
            if stream is not None:
                self._attach(req, stream)
                return
            self._start(req, req)
            return  # a miss took the turn: a waiting prefetch gives way
        if waiting_prefetch is not None:
            shown_for, target, source = waiting_prefetch
            if self.cache.serve(target) is None and self._find(target) is None:
                self.result.speculative += 1
                self._start(shown_for, target, source=source)

    def _grace_seconds(self) -> float | None:
        """The model's grace; ours follows the service's answer time as the registry does."""
        grace = self.model.grace
        if grace is None or not self.model.slow_path or self.throttle is None:
            return grace
        answer: float | None = self.throttle.full_answer
        if answer is None:
            return grace
        return max(grace, min(MAX_GRACE, answer))

    def _grace_applies(self, stream: Stream) -> bool:
        """The idle grace cancels a stream only where a cancel saves the prompt (ours)."""
        if stream.doomed:
            return False
        return not self.model.slow_path or self.cost.cancel_saves_prompt

    def _give_up(self, req: SimRequest, stream: Stream) -> None:
        if not self._live(req) or self._waiting.get(req.index) is not stream or not stream.alive:
            return
        self._waiting.pop(req.index)
        stream.waiters.discard(req.index)
        if not stream.waiters:
            self._cancel(stream)
        self._start(req, req)

    # -- streams -------------------------------------------------------------------

    def _find(self, req: SimRequest) -> Stream | None:
        best: Stream | None = None
        for stream in self._streams.get(req.uri, ()):
            if not stream.doomed and stream.followed_by(req, self.latency, self.now):
                if best is None or len(stream.line_prefix) > len(best.line_prefix):
                    best = stream
        return best

    def _drop_inconsistent(self, req: SimRequest) -> None:
        """Cancel the document's unattended streams the user has moved away from."""
        if not (self.model.attach or self.model.wait_consistent > 0):
            return
        for stream in list(self._streams.get(req.uri, ())):
            if stream.waiters or stream.source is not None or stream.doomed:
                continue  # prefetches are dropped by their own rule
            if not stream.followed_by(req, self.latency, self.now):
                self._leave(stream)

    def _leave(self, stream: Stream) -> None:
        """Give up a stream that can serve nobody: cancelled, or doomed on a local server."""
        if (
            not self.model.slow_path
            or self.cost.cancel_saves_prompt
            or stream.generating(self.latency, self.now)
        ):
            self._cancel(stream)
            return
        stream.doomed = True
        self.result.doomed += 1
        self._at(stream.start + self.latency.ttft, self._first_token, stream)

    def _first_token(self, stream: Stream) -> None:
        """A doomed stream's prompt is paid for: it is closed now."""
        if stream.alive and stream.doomed:
            self._cancel(stream)

    def _start(
        self, req: SimRequest, origin: SimRequest, source: tuple[LineAnchor, str, str] | None = None
    ) -> Stream:
        stream = Stream(
            uri=req.uri,
            anchor=origin.anchor,
            line_prefix=origin.line_prefix,
            raw=origin.answer_raw,
            start=self.now,
            origin=origin,
            source=source,
        )
        if source is None:
            self._attach(req, stream)
        if self._busy(req.uri):
            self.result.overlapping += 1
        self._streams.setdefault(req.uri, []).append(stream)
        self.result.started += 1
        self._at(self.latency.done_at(self.now, len(stream.raw)), self._complete, stream)
        first_line = self.latency.first_line_at(self.now, stream.raw)
        if first_line is not None and self.model.slow_path:
            self._at(first_line, self._first_line, stream)
        return stream

    def _first_line(self, stream: Stream) -> None:
        """The first line is complete: the service's answer time, and the first-line waiters."""
        if not stream.alive or stream.first_line_done:
            return
        stream.first_line_done = True
        if self.throttle is not None:
            self.throttle.note_answer(self.now - stream.start)
        end = self.latency.streamed(stream.start, len(stream.raw), self.now)
        for index in sorted(stream.first_line_waiters):
            stream.waiters.discard(index)
            self._waiting.pop(index, None)
            self._serve_from(stream, self.requests[index], stream.raw[:end])
        stream.first_line_waiters.clear()

    def _attach(self, req: SimRequest, stream: Stream) -> None:
        stream.waiters.add(req.index)
        stream.grace_token += 1
        self._waiting[req.index] = stream
        slow = self.throttle is not None and self.throttle.slow
        if self.model.slow_path and slow and not stream.first_line_done:
            stream.first_line_waiters.add(req.index)

    def _grace(self, stream: Stream, token: int) -> None:
        if stream.alive and not stream.waiters and stream.grace_token == token:
            self._cancel(stream)

    def _forget(self, stream: Stream) -> None:
        stream.alive = False
        streams = self._streams.get(stream.uri, [])
        if stream in streams:
            streams.remove(stream)

    def _cancel(self, stream: Stream) -> None:
        if not stream.alive:
            return
        self._forget(stream)
        self.result.cancelled += 1
        self.result.wasted_chars += self.latency.streamed(stream.start, len(stream.raw), self.now)
        for index in stream.waiters:
            self._waiting.pop(index, None)
        stream.waiters.clear()
        stream.first_line_waiters.clear()
        if self.model.slow_path:
            self._turn_free(stream.uri)

    def _complete(self, stream: Stream) -> None:
        if not stream.alive:
            return
        self._forget(stream)
        self.result.completed += 1
        if self.throttle is not None:
            if self.model.slow_path and not stream.first_line_done:
                self.throttle.note_answer(self.now - stream.start)
            self.throttle.note_full_answer(self.now - stream.start)
        stream.first_line_done = True
        if stream.raw:
            self.cache.store(stream.origin, stream.raw)
            self._recent.setdefault(stream.uri, deque(maxlen=64)).append(stream)
            self._finished.append(stream)
        for index in sorted(stream.waiters):
            self._waiting.pop(index, None)
            self._serve_from(stream, self.requests[index], stream.raw)
        stream.waiters.clear()
        stream.first_line_waiters.clear()
        if self.model.slow_path:
            self._turn_free(stream.uri)

    def _serve_from(self, stream: Stream, req: SimRequest, text: str) -> None:
        """Show ``req`` what ``stream`` has produced (``text``) past what was typed since."""
        if not self._live(req):
            return
        typed = req.line_prefix[len(stream.line_prefix) :]
        rest = text[len(typed) :] if text.startswith(typed) else ""
        self._show(req, rest, self.now)
        stream.seen = stream.seen or bool(rest)

    # -- showing -------------------------------------------------------------------

    def _hit(self, req: SimRequest, cached: str) -> None:
        at = self.now + self.latency.hit
        if at >= self.next_t[req.index]:
            return
        self.result.hits += 1
        for stream in reversed(self._recent.get(req.uri, ())):
            if stream.raw.endswith(cached):
                stream.seen = True
                break
        self._show(req, cached, at)

    def _show(self, req: SimRequest, raw: str, at: float) -> None:
        shown = self.fit(raw, req.line_suffix)
        self._answered[req.index] = at
        if not shown:
            return
        self.result.suggested += 1
        if not (shown.startswith(req.answer) or req.answer.startswith(shown)):
            self.result.stale += 1
        if self.model.speculative:
            self._prefetch(req, shown)

    # -- speculative prefetch (ours) --------------------------------------------------

    def _prefetch(self, req: SimRequest, shown: str) -> None:
        found = self.speculation.candidate(req, shown, self.now, self._streams.get(req.uri, ()))
        if found is None:
            return
        target, accepted = found
        if self.cache.serve(target) is not None or self._find(target) is not None:
            return  # already known or already asked
        self.speculation.record(req.uri, accepted, self.now)
        source = (req.anchor, req.line_prefix, accepted)
        if self._turns_needed() and self._busy(req.uri):
            # it waits for the document's stream to end, and gives way to any miss
            self._prefetch_waiting[req.uri] = (req, target, source)
            return
        self.result.speculative += 1
        self._start(req, target, source=source)

    def _cancel_diverged_prefetch(self, req: SimRequest) -> None:
        """Cancel prefetches the user left (neither typing the suggestion nor past it)."""
        streams = self._streams.get(req.uri, ())
        for stream in self.speculation.diverged(req, streams, self.latency, self.now):
            if not stream.doomed:
                self._leave(stream)

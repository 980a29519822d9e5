"""The discrete-event model behind ``scopecache simulate --timed``.

One ``TimedRun`` plays one client design over a trace's requests in trace
time. Its parts:

* ``LatencyModel``: an upstream stream shows nothing for ``ttft`` seconds,
  then streams one character per ``char_time``; a suggestion is shown when
  its stream ends, or, on a service slower than the typing, as soon as its
  first line is complete (as the server's pipeline does); a cache hit takes
  ``hit``.
* the service's cost model (``transport.cost``): on a local server a
  stream that can serve nobody is doomed, not cancelled, and the server is
  asked at once while none of our streams is at it (the idle rule).
* ``ClientModel``: when a client reads its cache (before or after a fixed
  debounce), how a miss waits (none, Cody's smart throttle, our adaptive
  ``MissThrottle``), what happens to in-flight streams on a keystroke (cancel
  them all, attach to a consistent one, wait a while for it), and whether it
  prefetches the post-accept state.
* a request is superseded by the next event of its document (keystroke,
  cursor move, close): anything ready after that is not shown to it.

Counts per run (``TimedResult``): instant answers (within 10 ms), answers
before the next keystroke, upstream streams started / completed / cancelled,
wasted characters (streamed for a cancelled stream, or for a finished one no
request ever saw, directly or from the cache), and stale serves (a shown text
inconsistent with what the engine answers at that state, as in the untimed
``simulate``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cache.keys import LineAnchor
from lsp_server.completion.inflight import DEFAULT_GRACE
from lsp_server.kit.simulate.strategies import SimRequest

logger = logging.getLogger(__name__)

#: answered within this many seconds of the keystroke counts as instant
INSTANT = 0.010
#: Cody-style: at most one promoted (non line-start) request per this many seconds
CODY_PROMOTE_GAP = 0.25
CODY_DEBOUNCE = 0.025


@dataclass(frozen=True, slots=True)
class LatencyModel:
    """Upstream timing: time to first token, then ``char_time`` per streamed character."""

    ttft: float = 0.3
    char_time: float = 0.005
    hit: float = 0.001

    def done_at(self, start: float, chars: int) -> float:
        """When a stream of ``chars`` characters started at ``start`` ends."""
        return start + self.ttft + chars * self.char_time

    def first_line_at(self, start: float, raw: str) -> float | None:
        """When the first complete line of ``raw`` has streamed, or None (it has none)."""
        first = raw.find("\n")
        while first >= 0 and not raw[:first].strip():
            first = raw.find("\n", first + 1)
        if first < 0:
            return None
        return start + self.ttft + (first + 1) * self.char_time

    def streamed(self, start: float, chars: int, now: float) -> int:
        """Characters streamed by ``now``."""
        if now <= start + self.ttft:
            return 0
        if self.char_time <= 0:
            return chars
        return min(chars, int((now - start - self.ttft) / self.char_time))


@dataclass(frozen=True, kw_only=True, slots=True)
class ClientModel:
    """The request behaviour of one client design."""

    name: str
    #: cache design name (see ``timed.make_cache``)
    cache: str
    #: fixed wait before anything is looked at (delays cache hits too)
    debounce: float = 0.0
    #: cancel every in-flight stream of the document on each keystroke
    cancel_on_keystroke: bool = False
    #: attach to an in-flight stream the user is typing through
    attach: bool = False
    #: wait this long for a consistent in-flight stream, then cancel it and ask anew
    wait_consistent: float = 0.0
    #: how a miss waits: "none", "cody" or "adaptive" (``MissThrottle``)
    throttle: str = "none"
    #: cancel unattended streams after this many seconds (None: never)
    grace: float | None = None
    #: prefetch the post-accept state after a suggestion is shown
    speculative: bool = False
    #: the server's slow-path policy (``ours``): one stream per document at a
    #: service that queues requests or answers slower than the typing (the
    #: newest state next, a prefetch after any miss), a stream that can serve
    #: nobody doomed (closed at its first token) where a cancel saves no
    #: prompt, no idle grace there, pacing at typing pauses while a stream is
    #: at the service, and the first line shown as soon as it is complete
    slow_path: bool = False


CLIENT_MODELS: dict[str, ClientModel] = {
    "tabby": ClientModel(
        name="tabby", cache="uri-prefix-suffix", debounce=0.25, cancel_on_keystroke=True
    ),
    "continue": ClientModel(name="continue", cache="prefix", debounce=0.35, attach=True),
    "cody": ClientModel(name="cody", cache="cody", attach=True, throttle="cody"),
    "copilot": ClientModel(name="copilot", cache="prefix-trie", wait_consistent=0.2),
    "ours": ClientModel(
        name="ours",
        cache="scope",
        attach=True,
        throttle="adaptive",
        grace=DEFAULT_GRACE,
        speculative=True,
        slow_path=True,
    ),
}
#: the designs compared by default
DESIGN_NAMES = tuple(CLIENT_MODELS)
# Ablations (``--designs all``): ours without speculative prefetch, and our request
# behaviour over the prefix-keyed caches, so that key designs compare at equal timing.
for _name, _cache in (
    ("ours-nospec", "scope"),
    ("ours-prefix", "prefix"),
    ("ours-prefix-trie", "prefix-trie"),
):
    CLIENT_MODELS[_name] = ClientModel(
        name=_name, cache=_cache, attach=True, throttle="adaptive", grace=DEFAULT_GRACE,
        slow_path=True,
    )  # fmt: skip


@dataclass(eq=False)
class Stream:
    """One upstream stream in the model."""

    uri: str
    anchor: LineAnchor
    line_prefix: str
    raw: str
    start: float
    origin: SimRequest
    waiters: set[int] = field(default_factory=set)
    alive: bool = True
    seen: bool = False
    grace_token: int = 0
    #: speculative: the line the suggestion came from and its text once accepted
    source: tuple[LineAnchor, str, str] | None = None
    #: it can serve nobody: closed at its first token (the prompt is paid for by then)
    doomed: bool = False
    #: requests that are shown the first line as soon as it is complete
    first_line_waiters: set[int] = field(default_factory=set)
    #: the first line is complete (or the stream ended)
    first_line_done: bool = False

    def generating(self, latency: LatencyModel, now: float) -> bool:
        """The service has read the prompt and streams (its first token came)."""
        return now >= self.start + latency.ttft

    def consistent_with(self, line_prefix: str, streamed: int) -> bool:
        """The user's typing since the start agrees with what has streamed so far."""
        if not line_prefix.startswith(self.line_prefix):
            return False
        typed, text = line_prefix[len(self.line_prefix) :], self.raw[:streamed]
        return text.startswith(typed) or typed.startswith(text)

    def followed_by(self, req: SimRequest, latency: LatencyModel, now: float) -> bool:
        """``req`` is on the stream's line and agrees with what has streamed by ``now``."""
        streamed = latency.streamed(self.start, len(self.raw), now)
        return self.anchor == req.anchor and self.consistent_with(req.line_prefix, streamed)


@dataclass(kw_only=True)
class TimedResult:
    """What one design did with a trace at one latency model."""

    design: str
    ttft_ms: float
    requests: int = 0
    instant: int = 0
    answered: int = 0
    suggested: int = 0
    hits: int = 0
    started: int = 0
    completed: int = 0
    cancelled: int = 0
    speculative: int = 0
    #: streams that could serve nobody, closed at their first token (local server)
    doomed: int = 0
    #: streams started while another of their document was still at the service
    overlapping: int = 0
    wasted_chars: int = 0
    #: streams cancelled, or finished with an answer nobody saw
    wasted_streams: int = 0
    stale: int = 0
    latencies: list[float] = field(default_factory=list, repr=False)

    def settle(
        self,
        requests: Sequence[SimRequest],
        answered_at: Sequence[float | None],
        finished: Iterable[Stream],
    ) -> None:
        """Count answers, latencies and waste once every event has been played.

        ``answered_at[i]`` is when request ``i`` was answered (None: not before
        its next event); ``finished`` the streams that completed with text.
        """
        self.requests = len(requests)
        for req in requests:
            at = answered_at[req.index]
            if at is None:
                self.latencies.append(math.inf)
                continue
            self.latencies.append(at - req.t)
            self.answered += 1
            self.instant += at - req.t <= INSTANT
        unseen = [s for s in finished if not s.seen]
        self.wasted_chars += sum(len(s.raw) for s in unseen)
        self.wasted_streams = self.cancelled + len(unseen)

    def share(self, count: int) -> float:
        """``count`` over the number of requests."""
        return count / self.requests if self.requests else 0.0

    def percentile(self, q: float) -> float:
        """Latency percentile in ms (nearest rank); inf when not answered in time."""
        if not self.latencies:
            return 0.0
        ordered = sorted(self.latencies)
        return 1000.0 * ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]

    def to_json(self) -> dict[str, Any]:
        """CamelCase figures; a latency percentile that was never reached is null."""

        def ms(q: float) -> float | None:
            value = self.percentile(q)
            return None if math.isinf(value) else round(value, 1)

        return {
            "ttftMs": self.ttft_ms,
            "requests": self.requests,
            "instant": round(self.share(self.instant), 6),
            "answeredBeforeNextKeystroke": round(self.share(self.answered), 6),
            "suggested": round(self.share(self.suggested), 6),
            "cacheHits": self.hits,
            "upstream": {
                "started": self.started,
                "completed": self.completed,
                "cancelled": self.cancelled,
                "speculative": self.speculative,
                "doomed": self.doomed,
                "overlapping": self.overlapping,
            },
            "wastedStreams": self.wasted_streams,
            "wastedChars": self.wasted_chars,
            "stale": self.stale,
            "latencyMs": {"p50": ms(0.5), "p95": ms(0.95)},
        }

"""``scopecache simulate --timed``: client designs compared in trace time.

The trace is read as the untimed ``simulate`` reads it (``collect_requests``:
the server's documents, syntax contexts and keys, the reference engine over
the final texts) plus what time and speculation need:

* ``next_t``: when each request's document next changes (or the cursor
  moves, or it closes): the request is superseded then;
* the post-accept request of each answered request: the document after
  accepting the first line of the engine's answer and pressing Enter with
  auto-indent, the cursor at the start of the new line (its key, anchor and
  the engine's answer there), for ``ours``' speculative prefetch;
* the next line's fingerprint, for the Cody-style cache key.

Each design in ``model.CLIENT_MODELS`` is then played by
``TimedRun`` with its own cache (the untimed designs of ``strategies``, and
``CodyDesign`` here) at each time to first token asked for.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cachetools import LRUCache

from cache.keys import fingerprint
from cache.policies import make_policy
from lsp_server.completion.throttle import MissThrottle
from lsp_server.documents.document import Document
from lsp_server.kit.simulate.post_accept import PrefetchTargets
from lsp_server.kit.simulate.strategies import (
    ForwardEntryDesign,
    KeyDesign,
    PrefixDesign,
    ScopeDesign,
    SimRequest,
)
from lsp_server.kit.simulate.timed.model import CLIENT_MODELS, LatencyModel, TimedResult
from lsp_server.kit.simulate.timed.run import TimedRun
from lsp_server.observe.trace.reader import read_header
from lsp_server.settings import CompletionSettings, Settings
from transport.cost import REMOTE_SERVICE, ServiceCost

logger = logging.getLogger(__name__)

#: the times to first token of ``--plot`` (ms)
PLOT_TTFTS = (100.0, 300.0, 800.0, 1500.0)
#: characters per token when ``--token-ms`` is turned into a streaming rate
CHARS_PER_TOKEN = 4
#: default streaming time per token (ms)
DEFAULT_TOKEN_MS = 20.0


@dataclass(kw_only=True)
class TimedTrace:
    """A trace's requests with what the timed model needs beside them."""

    requests: list[SimRequest]
    next_t: list[float]
    next_line_fp: dict[int, int]
    prefetch: dict[int, SimRequest]


def next_event_times(path: str | Path, count: int) -> list[float]:
    """For each request (in trace order), the time of the next event in its document."""
    next_t = [float("inf")] * count
    pending: dict[str, list[int]] = {}
    index = 0
    with open(path, encoding="utf-8") as fh:
        fh.readline()
        for raw in fh:
            if not raw.strip():
                continue
            event = json.loads(raw)
            uri, t = event["uri"], float(event["t"])
            for waiting in pending.pop(uri, ()):
                next_t[waiting] = t
            if event["op"] == "complete":
                pending[uri] = [index]
                index += 1
    return next_t


def collect_timed(
    path: str | Path,
    completion: CompletionSettings | None = None,
    on_event: Callable[[], None] | None = None,
) -> TimedTrace:
    """Read a trace for the timed model (see the module docstring)."""
    from lsp_server.kit.simulate.requests import ReferenceAnswers, collect_requests

    answers = ReferenceAnswers(read_header(path).final.values(), completion)
    targets = PrefetchTargets(answers)
    next_line_fp: dict[int, int] = {}
    prefetch: dict[int, SimRequest] = {}

    def on_request(req: SimRequest, doc: Document) -> None:
        below = doc.line_text(req.line + 1) if req.line + 1 < doc.line_count else ""
        next_line_fp[req.index] = fingerprint(below.rstrip("\r\n"))
        target = targets(req, doc)
        if target is not None:
            prefetch[req.index] = target

    requests = collect_requests(path, answers, on_event=on_event, on_request=on_request)
    return TimedTrace(
        requests=requests,
        next_t=next_event_times(path, len(requests)),
        next_line_fp=next_line_fp,
        prefetch=prefetch,
    )


class CodyDesign:
    """Prefix (as before-line text + line prefix) plus the next line, typed-through, LRU 250."""

    def __init__(self, next_line_fp: dict[int, int], capacity: int = 250) -> None:
        self.cache: LRUCache[tuple[int, str], tuple[str, int | None]] = LRUCache(capacity)
        self.next_line_fp = next_line_fp

    def serve(self, req: SimRequest) -> str | None:
        """The longest cached line prefix whose answer the user is typing, same next line."""
        below = self.next_line_fp.get(req.index)
        lp = req.line_prefix
        for k in range(len(lp), -1, -1):
            got = self.cache.get((req.before_fp, lp[:k]))
            if got is None or got[1] != below:
                continue
            text, typed = got[0], lp[k:]
            if len(text) > len(typed) and text.startswith(typed):
                return text[len(typed) :]
        return None

    def store(self, req: SimRequest, raw: str) -> None:
        """Cache the answer under its prefix and next line."""
        self.cache[(req.before_fp, req.line_prefix)] = (raw, self.next_line_fp.get(req.index))


def make_cache(name: str, trace: TimedTrace, clock: Callable[[], float]) -> KeyDesign:
    """The cache design ``name`` of a client model, on the run's clock."""
    from cache.store import CompletionStore

    if name == "scope":
        capacity = Settings().cache.capacity
        return ScopeDesign(CompletionStore(make_policy("hybrid", capacity), timer=clock))
    if name == "prefix":
        return PrefixDesign(1000, check_suffix=False)
    if name == "prefix-trie":
        return PrefixDesign(100, check_suffix=True)
    if name == "uri-prefix-suffix":
        return ForwardEntryDesign(clock)
    if name == "cody":
        return CodyDesign(trace.next_line_fp)
    raise ValueError(f"unknown cache design {name!r}")


def run_design(
    design: str,
    trace: TimedTrace,
    latency: LatencyModel,
    *,
    max_per_minute: int = 30,
    cost: ServiceCost = REMOTE_SERVICE,
) -> TimedResult:
    """Play one design over the trace at one latency model, against a service of ``cost``."""
    from lsp_server.completion.pipeline import fit_to_line

    model = CLIENT_MODELS[design]
    box: list[TimedRun] = []

    def clock() -> float:
        return box[0].now if box else 0.0

    throttle = None
    if model.throttle == "adaptive":
        t = Settings().throttle
        throttle = MissThrottle(
            min_delay=t.min_delay_ms / 1000.0,
            max_delay=t.max_delay_ms / 1000.0,
            max_pause=t.max_pause_ms / 1000.0,
            line_start_immediate=t.line_start_immediate,
            first_word_waits=t.first_word_waits,
            clock=clock,
        )
    run = TimedRun(
        model,
        trace.requests,
        trace.next_t,
        latency,
        make_cache(model.cache, trace, clock),
        fit=fit_to_line,
        prefetch=trace.prefetch if model.speculative else None,
        throttle=throttle,
        max_per_minute=max_per_minute,
        cost=cost,
    )
    box.append(run)
    return run.run()


def simulate_timed(
    trace: TimedTrace,
    designs: Iterable[str],
    ttfts_ms: Sequence[float],
    *,
    token_ms: float = DEFAULT_TOKEN_MS,
    on_run: Callable[[], None] | None = None,
    cost: ServiceCost = REMOTE_SERVICE,
) -> list[TimedResult]:
    """Every design at every time to first token, against a service of ``cost``."""
    results = []
    for ttft in ttfts_ms:
        latency = LatencyModel(ttft=ttft / 1000.0, char_time=token_ms / 1000.0 / CHARS_PER_TOKEN)
        for design in designs:
            results.append(run_design(design, trace, latency, cost=cost))
            if on_run is not None:
                on_run()
    return results

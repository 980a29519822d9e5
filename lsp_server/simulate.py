"""``scopecache simulate``: policies and key designs compared offline on one trace.

In process, no network. The trace is read through the server's own
``DocumentStore`` and ``syntax_context``; keys come from the pipeline's
``keys_for``; the ``scope`` design is the server's ``CompletionStore`` over
each policy; and the reference service's ``CorpusEngine`` over the trace's
``final`` texts stands in for the model, asked with the prompt the server
would send, so simulate and replay agree. ``opt`` is Belady's optimum on the
same key stream: the stream is computed first, then ``OptimalCache`` is
driven with it as the future.

Measures per design (and per policy and capacity where the design has one):
hit ratio (requests answered without an upstream call), upstream requests,
useful ratio (served text non-empty and consistent with ``expect``, over
requests that have one) and stale serves (a served text that differs from
what the engine would answer now: neither is a prefix of the other).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cachetools import Cache
from lsprotocol import types as lsp

from cache.keys import fingerprint
from cache.policies import OptimalCache, make_policy
from lsp_server.documents import Document, DocumentStore
from lsp_server.settings import CompletionSettings
from lsp_server.strategies import (
    POLICY_STRATEGIES,
    STRATEGY_NAMES,
    ForwardEntryDesign,
    IdealDesign,
    KeyDesign,
    PositionDesign,
    PrefixDesign,
    ScopeDesign,
    SimRequest,
)
from lsp_server.syntax import SyntaxContext, completion_context
from lsp_server.trace import ChangeEvent, CompleteEvent, OpenEvent, TraceError
from lsp_server.trace_reader import iter_trace
from transport.reference.engine import CorpusEngine

logger = logging.getLogger(__name__)

DEFAULT_POLICIES = ("lru", "lfu", "arc", "lruk", "hybrid", "opt")
StoreFactory = Callable[[Any], Any]


def default_store(policy: Any) -> Any:
    """The server's completion store over ``policy``."""
    from cache.store import CompletionStore

    return CompletionStore(policy)


def _change(change: Any) -> lsp.TextDocumentContentChangeEvent:
    if change.range is None:
        return lsp.TextDocumentContentChangeWholeDocument(text=change.text)
    start, end = change.range
    return lsp.TextDocumentContentChangePartial(
        range=lsp.Range(
            start=lsp.Position(line=start.line, character=start.character),
            end=lsp.Position(line=end.line, character=end.character),
        ),
        text=change.text,
    )


class ReferenceAnswers:
    """The reference engine over a trace's final texts, asked as the server asks the service.

    ``context`` derives the syntax context with the settings' prompt windows;
    ``answer`` asks the engine with the context's prefix and suffix,
    ``max_tokens`` and ``stop`` (block openers are detected by the engine),
    once per distinct prompt prefix.
    """

    def __init__(self, final: Iterable[str], completion: CompletionSettings | None = None) -> None:
        self.engine = CorpusEngine(final)
        self.completion = completion or CompletionSettings()
        self._answers: dict[tuple[int, bool], str] = {}

    def context(self, doc: Document, position: lsp.Position) -> SyntaxContext:
        """The syntax context the server derives at ``position``."""
        return completion_context(doc, position, self.completion)

    def answer(self, ctx: SyntaxContext) -> str:
        """The engine's raw answer for the prompt built from ``ctx``."""
        memo = (fingerprint(ctx.prefix), ctx.block_opener)
        raw = self._answers.get(memo)
        if raw is None:
            c = self.completion
            done = self.engine.complete(
                ctx.prefix, ctx.suffix, max_tokens=c.max_tokens, stop=c.stop
            )
            raw = self._answers[memo] = done.text
        return raw


def collect_requests(
    path: str | Path,
    answers: ReferenceAnswers | None = None,
    on_event: Callable[[], None] | None = None,
    on_request: Callable[[SimRequest, Document], None] | None = None,
) -> list[SimRequest]:
    """Every completion request of a trace, with its context and the engine's answer.

    ``answers`` defaults to the engine over the trace's final texts with the
    default completion settings. ``on_request`` sees each request with its
    ``Document`` as it is then (and must leave it so).
    """
    from lsp_server.pipeline import fit_to_line, keys_for

    header, events = iter_trace(path)
    if answers is None:
        answers = ReferenceAnswers(header.final.values())
    store = DocumentStore()
    versions: dict[str, int] = {}
    requests: list[SimRequest] = []
    for event, docs in events:
        if on_event is not None:
            on_event()
        if isinstance(event, OpenEvent):
            store.open(event.uri, event.language_id, 0, event.text)
            versions[event.uri] = 0
        elif isinstance(event, ChangeEvent):
            versions[event.uri] += 1
            store.change(event.uri, versions[event.uri], [_change(ch) for ch in event.changes])
        elif isinstance(event, CompleteEvent):
            doc = store.get(event.uri)
            assert doc is not None  # the reader checked the document is open
            pos = lsp.Position(line=event.position.line, character=event.position.character)
            ctx = answers.context(doc, pos)
            key, anchor = keys_for(ctx)
            raw = answers.answer(ctx)
            line = event.position.line
            before = "\n".join(docs.line(event.uri, n) for n in range(line))
            after_lines = [ctx.line_suffix] + [
                docs.line(event.uri, n) for n in range(line + 1, docs.line_count(event.uri))
            ]
            requests.append(
                SimRequest(
                    index=len(requests),
                    t=event.t,
                    uri=event.uri,
                    line=line,
                    character=event.position.character,
                    key=key,
                    anchor=anchor,
                    line_prefix=ctx.line_prefix,
                    line_suffix=ctx.line_suffix,
                    line_context=ctx.line_context,
                    before_fp=fingerprint(before),
                    after_fp=fingerprint("\n".join(after_lines)),
                    suffix_fp=fingerprint(ctx.suffix),
                    expect=event.expect,
                    at_line_start=ctx.at_line_start,
                    answer_raw=raw,
                    answer=fit_to_line(raw, ctx.line_suffix),
                )
            )
            if on_request is not None:
                on_request(requests[-1], doc)
    return requests


@dataclass(kw_only=True)
class DesignResult:
    """What one design (at one policy and capacity) did with the request stream."""

    strategy: str
    policy: str | None = None
    capacity: int | None = None
    requests: int = 0
    hits: int = 0
    upstream: int = 0
    served: int = 0
    useful: int = 0
    with_expect: int = 0
    stale: int = 0

    @property
    def hit_ratio(self) -> float:
        """Share of requests answered without an upstream call."""
        return self.hits / self.requests if self.requests else 0.0

    @property
    def useful_ratio(self) -> float:
        """Share of requests with ``expect`` whose suggestion was useful."""
        return self.useful / self.with_expect if self.with_expect else 0.0

    def to_json(self) -> dict[str, Any]:
        """CamelCase figures for ``--json``."""
        return {
            "policy": self.policy,
            "capacity": self.capacity,
            "requests": self.requests,
            "hits": self.hits,
            "hitRatio": round(self.hit_ratio, 6),
            "upstreamRequests": self.upstream,
            "useful": self.useful,
            "usefulRatio": round(self.useful_ratio, 6),
            "stale": self.stale,
        }


def consistent(served: str, expect: str) -> bool:
    """A suggestion is useful when non-empty and one of it and ``expect`` starts the other."""
    return bool(served) and (served.startswith(expect) or expect.startswith(served))


def run_design(design: KeyDesign, requests: Sequence[SimRequest], result: DesignResult) -> None:
    """Drive ``design`` through the request stream, counting into ``result``."""
    from lsp_server.pipeline import fit_to_line

    for req in requests:
        result.requests += 1
        cached = design.serve(req)
        if cached is None:
            result.upstream += 1
            if req.answer_raw:
                design.store(req, req.answer_raw)
            shown = req.answer
        else:
            result.hits += 1
            shown = fit_to_line(cached, req.line_suffix)
            # A multi-line answer typed into is still consistent with the engine's
            # one-line answer now; a different text is not.
            if not (shown.startswith(req.answer) or req.answer.startswith(shown)):
                result.stale += 1
        if shown:
            result.served += 1
        if req.expect is not None:
            result.with_expect += 1
            result.useful += consistent(shown, req.expect)


def make_design(
    strategy: str,
    requests: Sequence[SimRequest],
    policy: str | None = None,
    capacity: int | None = None,
    store_factory: StoreFactory = default_store,
) -> KeyDesign:
    """Build one design; ``policy``/``capacity`` only for ``scope`` and ``position``."""
    clock = _TraceClock()
    if strategy == "scope" and policy == "opt":
        assert capacity is not None
        return _OptimalScope(
            _DrivenOptimal(capacity, used_keys(requests, store_factory)), store_factory
        )
    if strategy in POLICY_STRATEGIES:
        assert policy is not None and capacity is not None
        if policy == "opt":
            stream = [(r.uri, r.line, r.character) for r in requests]
            return PositionDesign(OptimalCache(capacity, stream))
        cache = make_policy(policy, capacity)
        if strategy == "scope":
            return ScopeDesign(store_factory(cache))
        return PositionDesign(cache)
    if strategy == "prefix":
        return PrefixDesign(1000, check_suffix=False)
    if strategy == "prefix-trie":
        return PrefixDesign(100, check_suffix=True)
    if strategy == "uri-prefix-suffix":
        return _Clocked(ForwardEntryDesign(clock), clock)
    if strategy == "ideal":
        return IdealDesign()
    raise ValueError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGY_NAMES)}")


def used_keys(requests: Sequence[SimRequest], store_factory: StoreFactory) -> list[Any]:
    """Pass one for OPT: the entry each request uses when nothing is ever evicted."""
    design = ScopeDesign(store_factory(make_policy("lru", max(1, len(requests)))))
    keys: list[Any] = []
    for req in requests:
        if design.serve(req) is None and req.answer_raw:
            design.store(req, req.answer_raw)
        keys.append(design.used)
    return keys


class _DrivenOptimal(OptimalCache[Any, Any]):
    """``OptimalCache`` whose cursor follows the request stream, not the store's reads.

    The store reads the policy (the exact key, then the key of a
    typed-through entry, by indexing or ``get``); those reads refresh an
    entry's next use but do not move the cursor, which ``advance`` moves once
    per request with the key that request uses.
    """

    def advance(self, key: Any) -> None:
        try:
            OptimalCache.__getitem__(self, key)
        except KeyError:
            pass

    def __getitem__(self, key: Any) -> Any:
        if not Cache.__contains__(self, key):
            raise KeyError(key)
        self._track(key)
        return Cache.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


class _OptimalScope(ScopeDesign):
    def __init__(self, policy: _DrivenOptimal, store_factory: StoreFactory) -> None:
        super().__init__(store_factory(policy))
        self.policy = policy
        self.future = policy._future

    def serve(self, req: SimRequest) -> str | None:
        self.policy.advance(self.future[req.index])
        return super().serve(req)


class _TraceClock:
    """Trace time for TTLs: set to each request's ``t`` before it is served."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _Clocked:
    def __init__(self, inner: KeyDesign, clock: _TraceClock) -> None:
        self.inner, self.clock = inner, clock

    def serve(self, req: SimRequest) -> str | None:
        self.clock.now = req.t
        return self.inner.serve(req)

    def store(self, req: SimRequest, raw: str) -> None:
        self.inner.store(req, raw)


def simulate(
    requests: Sequence[SimRequest],
    *,
    strategies: Iterable[str] = ("scope",),
    policies: Iterable[str] = DEFAULT_POLICIES,
    capacities: Iterable[int] = (16, 64, 256, 1024),
    store_factory: StoreFactory = default_store,
    on_run: Callable[[], None] | None = None,
) -> list[DesignResult]:
    """Every design, and every policy x capacity for the designs that have them."""
    results: list[DesignResult] = []
    for strategy in strategies:
        if strategy in POLICY_STRATEGIES:
            runs = [(p, c) for p in policies for c in capacities]
        else:
            runs = [(None, None)]  # type: ignore[list-item]
        for policy, capacity in runs:
            result = DesignResult(strategy=strategy, policy=policy, capacity=capacity)
            design = make_design(strategy, requests, policy, capacity, store_factory)
            run_design(design, requests, result)
            results.append(result)
            if on_run is not None:
                on_run()
    return results


def names(raw: str, known: Sequence[str], what: str) -> list[str]:
    """The comma-separated names in ``raw`` (``all``: every known one); ValueError if unknown."""
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if names == ["all"]:
        return list(known)
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(
            f"unknown {what} {', '.join(unknown) or '(none)'}; known: {', '.join(known)}"
        )
    return names


def run(args: argparse.Namespace) -> int:
    """Entry point of ``scopecache simulate``."""
    from rich.console import Console
    from rich.progress import Progress

    from lsp_server import simulate_report as report

    err = Console(stderr=True)
    if args.timed:
        from lsp_server.simulate_timed import run_timed

        return run_timed(args)
    try:
        strategies = names(args.strategies, STRATEGY_NAMES, "strategy")
        policies = names(args.policies, (*DEFAULT_POLICIES, "none"), "policy")
        capacities = [int(c) for c in args.capacities.split(",") if c.strip()]
        if not capacities or min(capacities) < 1:
            raise ValueError("--capacities needs positive integers")
    except ValueError as exc:
        err.print(f"scopecache simulate: {exc}")
        return 2
    with Progress(console=err, transient=True) as progress:
        reading = progress.add_task("reading trace", total=None)
        try:
            requests = collect_requests(args.trace, on_event=lambda: progress.advance(reading))
        except (OSError, TraceError) as exc:
            err.print(f"scopecache simulate: {exc}")
            return 2
        progress.update(reading, visible=False)
        per = len(policies) * len(capacities)
        total = sum(per if s in POLICY_STRATEGIES else 1 for s in strategies)
        task = progress.add_task("simulating", total=total)
        results = simulate(
            requests,
            strategies=strategies,
            policies=policies,
            capacities=capacities,
            on_run=lambda: progress.advance(task),
        )
    if args.plot:
        try:
            report.plot(results, capacities, policies, args.plot)
        except report.PlotUnavailable as exc:
            err.print(f"scopecache simulate: {exc}")
            return 2
    if args.json:
        data = report.report_json(results, capacities, policies)
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        out = Console()
        report.render_table(results, out)
        if args.plot:
            out.print(f"plot written to {args.plot}")
    return 0

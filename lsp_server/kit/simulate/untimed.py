"""``scopecache simulate``: policies and key designs compared offline on one trace.

In process, no network. The trace is read through the server's own
``DocumentStore`` and ``syntax_context``; keys come from the pipeline's
``keys_for``; the ``scope`` design is the server's ``CompletionStore`` over
each policy; and the reference service's ``CorpusEngine`` over the trace's
``final`` texts stands in for the model, asked with the prompt the server
would send, so simulate and replay agree (``requests``). ``opt`` is
Belady's optimum on the same key stream: the stream is computed first, then
``OptimalCache`` is driven with it as the future (``designs``).

Measures per design (and per policy and capacity where the design has one):
hit ratio (requests answered without an upstream call), upstream requests,
useful ratio (served text non-empty and consistent with ``expect``, over
requests that have one) and stale serves (a served text that differs from
what the engine would answer now: neither is a prefix of the other).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lsp_server.kit.simulate.designs import StoreFactory, default_store, make_design
from lsp_server.kit.simulate.strategies import POLICY_STRATEGIES, KeyDesign, SimRequest

logger = logging.getLogger(__name__)

DEFAULT_POLICIES = ("lru", "lfu", "arc", "lruk", "hybrid", "opt")


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
    from lsp_server.completion.pipeline import fit_to_line

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


#: default capacities, as shares of the answers an unbounded cache would keep
#: for the trace: every one of them evicts, so the policies' choices show
CAPACITY_SHARES = (0.02, 0.05, 0.1, 0.25, 0.5)


def working_set(requests: Sequence[SimRequest]) -> int:
    """How many answers the ``scope`` design stores on this stream when nothing is evicted."""
    unbounded = simulate(requests, policies=("lru",), capacities=(max(1, len(requests)),))
    return unbounded[0].upstream


def default_capacities(requests: Sequence[SimRequest]) -> list[int]:
    """Capacities below the trace's working set, so that every policy has to evict."""
    stored = working_set(requests)
    return sorted({max(1, round(stored * share)) for share in CAPACITY_SHARES})


def identical_policies(results: Sequence[DesignResult], policies: Sequence[str]) -> bool:
    """Whether every policy but ``opt`` had the same hit ratios on the ``scope`` design."""
    curves: dict[str, list[float]] = {}
    for r in results:
        if r.strategy == "scope" and r.policy is not None and r.policy != "opt":
            curves.setdefault(r.policy, []).append(round(r.hit_ratio, 9))
    compared = [curves[p] for p in policies if p in curves]
    return len(compared) > 1 and all(c == compared[0] for c in compared)

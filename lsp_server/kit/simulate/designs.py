"""Building each key design ``scopecache simulate`` runs, at a policy and capacity.

``make_design`` builds a design of ``strategies`` by name. For ``opt``,
Belady's optimum on the same key stream as the ``scope`` design: the stream
of entries each request uses is computed first (``used_keys``), then an
``OptimalCache`` is driven with it as the future, its cursor following the
requests rather than the store's reads. Designs with a TTL read trace time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from cachetools import Cache

from cache.policies import OptimalCache, make_policy
from lsp_server.kit.simulate.strategies import (
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

logger = logging.getLogger(__name__)

StoreFactory = Callable[[Any], Any]


def default_store(policy: Any) -> Any:
    """The server's completion store over ``policy``."""
    from cache.store import CompletionStore

    return CompletionStore(policy)


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

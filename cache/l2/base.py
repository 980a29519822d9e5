"""The L2 seam: a shared, slower cache tier under the in-process L1.

``L2Store`` is the interface the completion pipeline calls: ``get``, ``put``,
``invalidate``, ``hottest`` (for prewarming L1), and a feed of changes made
by *other* processes (``subscribe`` or ``changes``). Everything is async and
never blocks the event loop.

Degradation is handled here, once, for every store: a subclass implements
the ``_get``/``_put``/... hooks and raises ``L2Error`` subclasses; the public
methods turn any failure into a miss, log one line when the store goes down
and one when it comes back, and skip the store while it is down (with
exponential back-off), so a dead Redis costs a keystroke nothing. A host
that wants to tell its user registers ``on_state_change``: it is called once
per transition (down, then up again), never per failed call.

Every store is built with a namespace (endpoint + model + tenant); entries of
one namespace are never returned for another. Every entry a store hands out
(``get``, ``hottest``, changes) is marked ``from_l2``: the process reading it
may not be the one that fetched it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from cache.entry import CachedCompletion
from cache.keys import ScopeKey
from cache.l2.errors import L2EntryRejected, L2Error, L2ReadOnly

logger = logging.getLogger(__name__)

#: how many changes ``changes()`` buffers for a slow reader before dropping the oldest
CHANGE_QUEUE_SIZE = 4096

#: the operations that write: an outage a write met (``L2ReadOnly``: a full disk,
#: a read-only file) ends only when one succeeds, since reads go on working there
WRITES = frozenset({"put", "invalidate"})

Clock = Callable[[], float]
ChangeCallback = Callable[["L2Change"], None]
#: called with the new state (``"up"`` or ``"down"``) and, going down, the reason
StateCallback = Callable[[str, str], None]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class L2Change:
    """An entry stored, or a key invalidated, by another process."""

    kind: Literal["put", "invalidate"]
    key: ScopeKey
    #: the stored entry for ``put``; ``None`` for ``invalidate``
    entry: CachedCompletion | None = None


def namespace_id(namespace: str) -> str:
    """The stored form of a namespace: a hex digest, never the endpoint or model itself."""
    return hashlib.sha256(namespace.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def key_to_json(key: ScopeKey) -> str:
    """Serialize a key's fingerprints (no source text) so an invalidation can travel."""
    return json.dumps([key.language, key.structure, key.scope_fp, key.suffix_fp])


def key_from_json(raw: str | bytes) -> ScopeKey:
    """Parse ``key_to_json`` output; raises ValueError on anything malformed."""
    try:
        language, structure, scope_fp, suffix_fp = json.loads(raw)
        return ScopeKey(str(language), str(structure), int(scope_fp), int(suffix_fp))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"malformed key: {exc}") from exc


def handed_out(entry: CachedCompletion) -> CachedCompletion:
    """``entry`` as the shared tier hands it to a process: marked ``from_l2``."""
    return entry if entry.from_l2 else dataclasses.replace(entry, from_l2=True)


def parse_entry(raw: str | bytes) -> CachedCompletion | None:
    """A stored entry, or ``None`` (logged) when it is malformed: a bad row is a miss."""
    try:
        return CachedCompletion.from_json(raw)
    except ValueError as exc:
        logger.debug("skipping malformed L2 entry: %s", exc)
        return None


class L2Store(ABC):
    """A shared cache tier; callers never see exceptions from its methods."""

    #: reported in ``stats()["kind"]``
    kind = "abstract"

    def __init__(
        self,
        namespace: str,
        *,
        clock: Clock = time.time,
        retry_initial: float = 0.25,
        retry_max: float = 10.0,
    ) -> None:
        self.namespace = namespace
        self.namespace_id = namespace_id(namespace)
        self.clock = clock
        self._retry_initial = retry_initial
        self._retry_max = retry_max
        self._backoff = retry_initial
        self._retry_at = 0.0
        self._state: Literal["up", "down"] = "up"
        #: the outage is one of writes only (reads still work)
        self._writes_refused = False
        self._subscribers: list[ChangeCallback] = []
        self._state_listeners: list[StateCallback] = []
        self._counts = {"hits": 0, "misses": 0, "puts": 0, "errors": 0, "received": 0}
        self._answered = False

    # -- what subclasses implement -------------------------------------------------

    @abstractmethod
    async def _get(self, key: ScopeKey) -> CachedCompletion | None: ...

    @abstractmethod
    async def _put(self, entry: CachedCompletion) -> None: ...

    @abstractmethod
    async def _invalidate(self, key: ScopeKey) -> None: ...

    @abstractmethod
    async def _hottest(self, limit: int) -> list[CachedCompletion]: ...

    async def _start(self) -> None:
        """Open connections and start background work (default: nothing)."""
        return None

    async def _close(self) -> None:
        """Stop background work and release resources (default: nothing)."""
        return None

    def _size(self) -> int:
        """Entries in this namespace, as last known (no I/O)."""
        return 0

    # -- the public, failure-proof surface ------------------------------------------

    async def start(self) -> None:
        """Open the store; if that fails the store starts "down" and retries later."""
        await self._guard(self._start(), None, "start")

    async def aclose(self) -> None:
        """Stop background work and close the store."""
        self._subscribers.clear()
        self._state_listeners.clear()
        try:
            await self._close()
        except Exception as exc:  # closing must never raise into shutdown
            logger.debug("closing L2 %s store failed: %s", self.kind, exc)

    async def get(self, key: ScopeKey) -> CachedCompletion | None:
        """The entry stored under ``key`` in this namespace, or ``None`` (also when down)."""
        entry = await self._guard(self._get(key), None, "get") if self._may_try() else None
        self._counts["hits" if entry is not None else "misses"] += 1
        return handed_out(entry) if entry is not None else None

    async def put(self, entry: CachedCompletion) -> None:
        """Store ``entry`` (replacing any entry under its key); silently skipped when down."""
        if self._may_try():
            await self._guard(self._put(entry), None, "put")
            self._counts["puts"] += 1

    async def invalidate(self, key: ScopeKey) -> None:
        """Remove the entry under ``key`` here and in every process sharing the store."""
        if self._may_try():
            await self._guard(self._invalidate(key), None, "invalidate")

    async def hottest(self, limit: int) -> list[CachedCompletion]:
        """Up to ``limit`` entries of this namespace, most used (then most recent) first."""
        if limit <= 0 or not self._may_try():
            return []
        return [handed_out(e) for e in await self._guard(self._hottest(limit), [], "hottest")]

    def subscribe(self, callback: ChangeCallback) -> Callable[[], None]:
        """Call ``callback`` on the event loop for each change made by another process.

        Returns a function that ends the subscription.
        """
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def on_state_change(self, callback: StateCallback) -> None:
        """Call ``callback(state, reason)`` whenever the store goes down or comes back up."""
        self._state_listeners.append(callback)

    async def changes(self) -> AsyncGenerator[L2Change, None]:
        """Changes made by other processes, as an async iterator (a ``subscribe`` wrapper)."""
        queue: asyncio.Queue[L2Change] = asyncio.Queue()

        def enqueue(change: L2Change) -> None:
            if queue.qsize() >= CHANGE_QUEUE_SIZE:
                queue.get_nowait()  # a slow reader loses the oldest, not the newest
            queue.put_nowait(change)

        unsubscribe = self.subscribe(enqueue)
        try:
            while True:
                yield await queue.get()
        finally:
            unsubscribe()

    def stats(self) -> dict[str, Any]:
        """Counters and state: ``kind``, ``state``, ``answered``, ``size``, ``hits``, ..."""
        return {
            "kind": self.kind,
            "state": self._state,
            # whether any operation has worked yet (start-up over, the store answering)
            "answered": self._answered,
            "size": self._size(),
            **self._counts,
        }

    @property
    def state(self) -> str:
        """``"up"`` or ``"down"``."""
        return self._state

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} ns={self.namespace_id[:8]} state={self._state} "
            f"hits={self._counts['hits']} misses={self._counts['misses']}>"
        )

    # -- for subclasses -------------------------------------------------------------

    def _publish(self, change: L2Change) -> None:
        """Hand a change from another process to every subscriber."""
        self._counts["received"] += 1
        if change.entry is not None:
            change = dataclasses.replace(change, entry=handed_out(change.entry))
        for callback in list(self._subscribers):
            try:
                callback(change)
            except Exception:
                logger.exception("L2 change subscriber failed")

    def _mark_up(self, what: str = "") -> None:
        self._answered = True
        if self._writes_refused and what not in WRITES:
            return  # a read worked; the disk may still be full: not "back" yet
        self._writes_refused = False
        was_down = self._state == "down"
        self._state = "up"
        self._backoff = self._retry_initial
        self._retry_at = 0.0
        if was_down:
            logger.warning("L2 %s store is back up", self.kind)
            self._tell_state("up", "")

    def _mark_down(self, exc: BaseException) -> None:
        self._counts["errors"] += 1
        if self._state == "up":
            # One line per outage, not one per keystroke.
            logger.warning(
                "L2 %s store is down (%s); continuing without it", self.kind, exc or type(exc)
            )
        was_up = self._state == "up"
        self._state = "down"
        self._writes_refused = isinstance(exc, L2ReadOnly)
        self._retry_at = time.monotonic() + self._backoff
        self._backoff = min(self._backoff * 2, self._retry_max)
        if was_up:
            self._tell_state("down", str(exc) or type(exc).__name__)

    def _tell_state(self, state: str, reason: str) -> None:
        for callback in list(self._state_listeners):
            try:
                callback(state, reason)
            except Exception:
                logger.exception("L2 state listener failed")

    def _may_try(self) -> bool:
        return self._state == "up" or time.monotonic() >= self._retry_at

    async def _guard(self, work: Awaitable[T], fallback: T, what: str) -> T:
        try:
            result = await work
        except L2EntryRejected as exc:
            logger.debug("L2 %s %s rejected: %s", self.kind, what, exc)
            return fallback
        except L2Error as exc:
            self._mark_down(exc)
            return fallback
        except Exception as exc:
            logger.debug("unexpected L2 %s failure in %s", self.kind, what, exc_info=True)
            self._mark_down(exc)
            return fallback
        self._mark_up(what)
        return result

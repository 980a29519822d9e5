"""The server's own L2 store: built from the settings, followed, started, prewarmed.

``L2Link`` holds the shared tier the server built itself (a host's ``l2``
is the host's business). Answers another editor window stores arrive as
changes and become servable from L1 here too. Trouble mid-session (disk
full, Redis gone, file read-only) reaches the user once when the store goes
down and once when it is back. After ``initialized`` the store is started
and L1 is prewarmed with its hottest entries (``cache.prewarm``); a store
that was down at start-up prewarms when it comes back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from cache.l2.base import L2Change, L2Store
from cache.store import CompletionStore
from lsp_server.completion.notify import UserNotifier
from lsp_server.server import assembly
from lsp_server.settings import Settings

logger = logging.getLogger(__name__)

Spawn = Callable[[Coroutine[Any, Any, Any]], object]


class L2Link:
    """The L2 store built from the settings, and what the server does with it."""

    def __init__(
        self,
        *,
        notifier: UserNotifier,
        spawn: Spawn,
        l1: Callable[[], CompletionStore],
        prewarm_limit: Callable[[], int],
    ) -> None:
        self.store: L2Store | None = None
        self._notifier = notifier
        self._spawn = spawn
        self._l1 = l1
        self._prewarm_limit = prewarm_limit
        #: the store L1 was prewarmed from (once per store)
        self._prewarmed: L2Store | None = None

    def replace(self, settings: Settings, *, started: bool) -> L2Store | None:
        """Close the current store and build the one ``settings`` ask for (None: off).

        ``started`` tells whether the server is past ``initialized``: then the
        new store is started at once.
        """
        old, self.store = self.store, None
        if old is not None:
            self._spawn(old.aclose())
            self._notifier.resolved("l2")  # the new store reports its own trouble
        store = assembly.build_l2(settings)
        if store is None:
            return None
        self.store = store
        store.subscribe(self._on_change)
        store.on_state_change(lambda state, reason: self._on_state(store, state, reason))
        if started:
            self._spawn(self._start(store))
        return store

    def start(self) -> None:
        """Start the store in the background (after ``initialized``)."""
        if self.store is not None:
            self._spawn(self._start(self.store))

    async def aclose(self) -> None:
        """Release the store (shutdown)."""
        if self.store is not None:
            await self.store.aclose()

    def _on_change(self, change: L2Change) -> None:
        # Another editor window stored an answer: make it servable here too.
        if change.kind == "put" and change.entry is not None:
            self._l1().add_entry(change.entry)

    def _on_state(self, store: L2Store, state: str, reason: str) -> None:
        # Mid-session (disk full, Redis gone, file read-only): tell the user
        # once when it goes down and once when it is back.
        if store is not self.store:
            return  # a replaced store closing down is no news
        where = getattr(store, "path", None) or store.kind
        if state == "down":
            self._notifier.problem(
                "l2", f"shared cache unavailable ({where}: {reason[:200]}); continuing without it"
            )
        else:
            self._notifier.resolved("l2", f"shared cache available again ({where})")
            # A store that was down at start-up has not prewarmed L1 yet.
            if self._prewarmed is not store:
                self._spawn(self._prewarm(store))

    async def _start(self, store: L2Store) -> None:
        await store.start()
        if store.state == "down":
            return  # told the user already (``_on_state``); prewarmed once it is back
        await self._prewarm(store)

    async def _prewarm(self, store: L2Store) -> None:
        if self._prewarmed is store:
            return
        self._prewarmed = store
        limit = self._prewarm_limit()
        if limit <= 0:
            return
        entries = await store.hottest(limit)
        l1 = self._l1()
        for entry in entries:
            l1.add_entry(entry)
        if entries:
            logger.info("prewarmed L1 with %d entries from L2", len(entries))

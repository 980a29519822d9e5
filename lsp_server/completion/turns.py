"""At most one request per document at the service; the newest state goes next.

When the service answers slower than the developer types, sending a request
per keystroke only queues them at the service (a local server has one slot,
often) or cancels them before they answer. Instead a miss whose document
already has a stream at the service waits for that stream to end; if a newer
miss of the same document arrives meanwhile, the older one gives up (the
newer state wins, there is no queue). The stream that ends may well answer
the newest state by typed-through, which the pipeline looks for before it
asks again.

Turns are kept where they help: on a server that queues requests beyond the
one it runs (llama.cpp, Ollama: ``transport.cost``) and on any service that
answers slower than the user types. A fast remote service runs requests side
by side, and there nothing waits; hits never come here.

A speculative prefetch keeps the same rule: on a one-slot server a second
stream of the document would queue behind the first and hold up the next
miss. It waits for the document's stream to end and yields to any miss
(``after_misses``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from lsp_server.completion.inflight import InflightRegistry


class DocumentTurns:
    """Latest-wins turns at the service, per document."""

    def __init__(
        self, inflight: InflightRegistry, *, needed: Callable[[], bool] = lambda: True
    ) -> None:
        self._inflight = inflight
        #: whether turns are kept now (the service queues requests, or is slow)
        self._needed = needed
        self._latest: dict[str, object] = {}
        #: misses that gave up their turn to a newer state of their document
        self.superseded = 0
        #: misses that waited for a stream of their document to end
        self.waited = 0
        #: misses that asked for a turn
        self.asked = 0

    async def take(self, uri: str) -> bool:
        """Wait until ``uri`` has no stream at the service; False when a newer miss came.

        Cancellable: the editor cancelling the request ends the wait.
        """
        self.asked += 1
        if not self._needed():
            return True
        ticket = object()
        self._latest[uri] = ticket
        try:
            waited = False
            while (stream := self._inflight.busy(uri)) is not None:
                assert stream.task is not None
                waited = True
                await asyncio.wait({stream.task})
                if self._latest.get(uri) is not ticket:
                    self.superseded += 1
                    return False
            self.waited += waited
            return True
        finally:
            if self._latest.get(uri) is ticket:
                del self._latest[uri]

    @property
    def needed(self) -> bool:
        """Whether turns are kept now (the service queues requests, or is slow)."""
        return self._needed()

    async def after_misses(self, uri: str) -> bool:
        """For a speculative request: wait for the document's stream at the service to end.

        True when the turn is free then; False when a miss waits for it or
        took it meanwhile: a request the user is waiting for goes before a
        guess at what they will want, which never takes a turn from one.
        Waits for one stream only: a document busy again is one the user
        moved on in. Cancellable.
        """
        if not self._needed():
            return True
        stream = self._inflight.busy(uri)
        if stream is not None:
            assert stream.task is not None
            if uri in self._latest:
                return False
            await asyncio.wait({stream.task})
        return uri not in self._latest and self._inflight.busy(uri) is None

    def forget(self, uri: str) -> None:
        """Drop the document's state (closed)."""
        self._latest.pop(uri, None)

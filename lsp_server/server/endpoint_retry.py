"""When to try again an endpoint configuration that could not be used.

A backend that cannot be built (a ``transport.caFile`` that does not exist
yet, an unreadable one, auth settings that do not fit) leaves completions
off. The problem is not final: the file may appear a moment later. The
server re-checks when the same settings are sent again, at once, and on a
completion request once the back-off has passed (1 s, doubling to 30 s), so
a fixed file is picked up without a restart and a broken one costs one
attempt per back-off, not one per keystroke.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: seconds before the first re-check on a request, and the longest wait
FIRST_DELAY = 1.0
MAX_DELAY = 30.0


class EndpointRetry:
    """The back-off state of one unusable endpoint configuration."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        first_delay: float = FIRST_DELAY,
        max_delay: float = MAX_DELAY,
    ) -> None:
        self._clock = clock
        self._first = first_delay
        self._max = max_delay
        self._delay = first_delay
        self._due = 0.0
        self._running = False
        #: why the configuration cannot be used, or None when it can
        self.problem: str | None = None
        #: configurations tried again so far
        self.attempts = 0

    def failed(self, problem: str) -> None:
        """Building failed with ``problem``: wait longer before the next attempt."""
        if self.problem is not None:
            self._delay = min(self._delay * 2, self._max)
        self.problem = problem
        self._due = self._clock() + self._delay
        self._running = False

    def succeeded(self) -> None:
        """The configuration works (or there is nothing to build): forget the problem."""
        self.problem = None
        self._delay = self._first
        self._running = False

    def due(self) -> bool:
        """A problem is known, its back-off has passed and no attempt is running."""
        return self.problem is not None and not self._running and self._clock() >= self._due

    def begin(self) -> None:
        """An attempt starts; ``due`` is False until it ends."""
        self._running = True
        self.attempts += 1

    def __repr__(self) -> str:
        state = "ok" if self.problem is None else f"failing, next in {self._delay:.0f}s"
        return f"<EndpointRetry {state} attempts={self.attempts}>"

"""When a cache miss may go upstream. Hits never come here.

The rule (all delays bounded by ``throttle.minDelayMs`` and
``throttle.maxDelayMs``):

* a miss at the start of a line (only indentation before the cursor) goes at
  once when ``throttle.lineStartImmediate`` is on: the user is waiting there;
* any other miss waits ``clamp(min, max, min(typing / 2, ttft / 4))`` where
  ``typing`` is the smoothed interval between the user's keystrokes in that
  document and ``ttft`` the smoothed time to first token of the service.

A fast typist's intermediate keystrokes are thus skipped (their requests are
cancelled by the editor while they wait), while a slow typist or a fast
service gets a request almost at once. The wait is an ``asyncio.sleep``, so
``$/cancelRequest`` ends it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

#: smoothing factor of the exponential moving averages
EWMA_WEIGHT = 0.3
#: intervals longer than this are pauses, not typing
MAX_TYPING_INTERVAL = 1.0


class MissThrottle:
    """Adaptive wait before a miss is sent upstream."""

    def __init__(
        self,
        *,
        min_delay: float = 0.015,
        max_delay: float = 0.120,
        line_start_immediate: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.min_delay = min_delay
        self.max_delay = max_delay
        self.line_start_immediate = line_start_immediate
        self._clock = clock
        self._last_key: dict[str, float] = {}
        self._typing: float | None = None
        self._ttft: float | None = None

    def note_keystroke(self, uri: str) -> None:
        """Record a change in ``uri`` (updates the typing-speed estimate)."""
        now = self._clock()
        last = self._last_key.get(uri)
        self._last_key[uri] = now
        if last is not None and 0 < now - last < MAX_TYPING_INTERVAL:
            self._typing = _ewma(self._typing, now - last)

    def note_ttft(self, seconds: float) -> None:
        """Record an upstream time to first token."""
        self._ttft = _ewma(self._ttft, seconds)

    @property
    def ttft(self) -> float | None:
        """The smoothed time to an upstream answer, once one was seen."""
        return self._ttft

    def forget(self, uri: str) -> None:
        """Drop per-document state (document closed)."""
        self._last_key.pop(uri, None)

    def delay_for(self, *, at_line_start: bool) -> float:
        """Seconds a miss waits before going upstream."""
        if at_line_start and self.line_start_immediate:
            return 0.0
        candidates = [self.max_delay]
        if self._typing is not None:
            candidates.append(self._typing / 2)
        if self._ttft is not None:
            candidates.append(self._ttft / 4)
        return max(self.min_delay, min(candidates))

    async def wait(self, *, at_line_start: bool) -> None:
        """Wait as the rule says (cancellable)."""
        delay = self.delay_for(at_line_start=at_line_start)
        if delay > 0:
            await asyncio.sleep(delay)


def _ewma(previous: float | None, sample: float) -> float:
    if previous is None:
        return sample
    return previous + EWMA_WEIGHT * (sample - previous)

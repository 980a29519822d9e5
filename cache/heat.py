"""The editing context's heat, turned into the hybrid policy's context weight alpha.

The server calls ``ContextHeat.record_line`` on every completion request with
two plain values: whether the editor asked by itself (``automatic``, while
typing) or the user invoked it, and the line prefix, whose token-position
entropy near the cursor (``line_entropy``, in [0, 1]) is computed when the
signals are next read: only a policy storing an entry (a miss) reads them,
so a cache hit never pays for it. ``record`` takes the entropy ready-made.
``alpha()`` combines three signals over a sliding window (``window`` seconds
on the injected timer):

* ``s`` - the share of automatic requests: typing-driven requests revisit the
  contexts of the last few seconds, so recency matters;
* ``h`` - the request heat: requests in the window over ``saturation``, capped
  at 1; fast typing produces short-lived contexts;
* ``e`` - the mean entropy near the cursor: varied, fresh code is less likely
  to be asked for again than repetitive code.

    alpha = 0.3 + 0.4 * (0.3 * s + 0.4 * h + 0.3 * e)

so alpha stays in [0.3, 0.7]; an idle context (no request in the window)
gives ``NEUTRAL_ALPHA``. A high alpha gives the hybrid policy's recency list
(ARC's T1) more room and its frequency region less.
"""

from __future__ import annotations

import math
import time
from collections import Counter, deque
from collections.abc import Callable

ALPHA_MIN = 0.3
ALPHA_MAX = 0.7
NEUTRAL_ALPHA = 0.5
DEFAULT_WINDOW_SECONDS = 10.0
#: requests per window at which the heat signal saturates
DEFAULT_SATURATION = 30
#: how many characters before the cursor the entropy looks at
ENTROPY_CHARS = 32


def line_entropy(line_prefix: str, chars: int = ENTROPY_CHARS) -> float:
    """Normalized Shannon entropy of the last ``chars`` characters before the cursor.

    0.0 for repetitive or empty text, 1.0 when every character differs;
    the maximum for n characters is log2(n), which normalizes it.
    """
    text = line_prefix[-chars:].strip()
    n = len(text)
    if n < 2:
        return 0.0
    entropy = 0.0
    for count in Counter(text).values():
        share = count / n
        entropy -= share * math.log2(share)
    return min(1.0, entropy / math.log2(n))


class ContextHeat:
    """Sliding-window signals of the editing context, giving alpha in [0.3, 0.7]."""

    def __init__(
        self,
        *,
        window: float = DEFAULT_WINDOW_SECONDS,
        saturation: int = DEFAULT_SATURATION,
        timer: Callable[[], float] = time.monotonic,
    ) -> None:
        if window <= 0:
            raise ValueError("window must be > 0 seconds")
        if saturation < 1:
            raise ValueError("saturation must be at least 1")
        self.window = window
        self.saturation = saturation
        self.timer = timer
        #: (time, automatic, entropy or the text it is still to be computed from), oldest first
        self._events: deque[tuple[float, bool, float | str]] = deque()
        self._automatic = 0
        #: the sum of the computed entropies, and how many events wait for theirs
        self._entropy_sum = 0.0
        self._unscored = 0

    def record(self, *, automatic: bool, entropy: float) -> None:
        """Note one completion request with the entropy near its cursor."""
        entropy = min(1.0, max(0.0, entropy))
        now = self.timer()
        self._events.append((now, automatic, entropy))
        self._automatic += automatic
        self._entropy_sum += entropy
        self._expire(now)

    def record_line(self, *, automatic: bool, line_prefix: str) -> None:
        """Note one completion request; its ``line_entropy`` is computed when next read."""
        now = self.timer()
        self._events.append((now, automatic, line_prefix[-ENTROPY_CHARS:]))
        self._automatic += automatic
        self._unscored += 1
        self._expire(now)

    def _expire(self, now: float) -> None:
        events = self._events
        horizon = now - self.window
        while events and events[0][0] <= horizon:
            _, automatic, entropy = events.popleft()
            self._automatic -= automatic
            if isinstance(entropy, str):
                self._unscored -= 1
            else:
                self._entropy_sum -= entropy
        if not events:
            self._entropy_sum = 0.0  # no float drift survives an idle period

    def _score(self) -> None:
        """Compute the entropies still owed (each event's once)."""
        self._events = deque(
            (at, automatic, line_entropy(entropy) if isinstance(entropy, str) else entropy)
            for at, automatic, entropy in self._events
        )
        self._entropy_sum = sum(float(event[2]) for event in self._events)
        self._unscored = 0

    def signals(self) -> tuple[float, float, float]:
        """The current (source share, heat, entropy) signals, each in [0, 1]."""
        self._expire(self.timer())
        if self._unscored:
            self._score()
        n = len(self._events)
        if n == 0:
            return (0.0, 0.0, 0.0)
        return (
            self._automatic / n,
            min(1.0, n / self.saturation),
            min(1.0, max(0.0, self._entropy_sum / n)),
        )

    def alpha(self) -> float:
        """The context weight: ``NEUTRAL_ALPHA`` when idle, else the formula above."""
        if not self._events:
            return NEUTRAL_ALPHA
        source, heat, entropy = self.signals()
        if not self._events:
            return NEUTRAL_ALPHA
        score = 0.3 * source + 0.4 * heat + 0.3 * entropy
        return ALPHA_MIN + (ALPHA_MAX - ALPHA_MIN) * score

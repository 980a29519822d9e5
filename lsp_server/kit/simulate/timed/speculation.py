"""The speculative prefetch of the ``ours`` design, as ``TimedRun`` plays it.

The rules are the server's prefetcher's (``speculate``), in trace time: after
a suggestion is shown at the end of a line, prefetch the post-accept request
once per predicted state, with at most one speculative stream per document,
within a per-minute budget; and cancel a prefetch the user has left (neither
typing the suggestion it predicted nor past it). ``TimedRun`` keeps the
streams and the cache; ``SpeculationRules`` decides.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from lsp_server.kit.simulate.strategies import SimRequest
from lsp_server.kit.simulate.timed.model import LatencyModel, Stream


class SpeculationRules:
    """When to prefetch the post-accept request, and which prefetches to drop.

    ``prefetch[i]`` is the post-accept request of request ``i``;
    ``max_per_minute`` the budget of speculative streams per 60 s of trace time.
    """

    def __init__(self, prefetch: dict[int, SimRequest], max_per_minute: int) -> None:
        self.prefetch = prefetch
        self.max_per_minute = max_per_minute
        self._spec_times: deque[float] = deque()
        self._last_predicted: dict[str, str] = {}

    def candidate(
        self, req: SimRequest, shown: str, now: float, streams: Iterable[Stream]
    ) -> tuple[SimRequest, str] | None:
        """The post-accept request to prefetch and the accepted line, if the rules allow.

        ``streams`` are the document's live streams. The caller still checks
        that the target is neither cached nor already asked, then ``record``s.
        """
        # as the server's prefetcher: only at the end of a line, once per predicted
        # state, one speculative stream per document, within the per-minute budget
        target = self.prefetch.get(req.index)
        if target is None or req.line_suffix.strip():
            return None
        accepted = req.line_prefix + shown.split("\n", 1)[0]
        if self._last_predicted.get(req.uri) == accepted:
            return None
        if any(s.source for s in streams):
            return None
        while self._spec_times and self._spec_times[0] <= now - 60.0:
            self._spec_times.popleft()
        if len(self._spec_times) >= self.max_per_minute:
            return None
        return target, accepted

    def record(self, uri: str, accepted: str, now: float) -> None:
        """A prefetch for the predicted line ``accepted`` starts at ``now``."""
        self._spec_times.append(now)
        self._last_predicted[uri] = accepted

    def diverged(
        self, req: SimRequest, streams: Iterable[Stream], latency: LatencyModel, now: float
    ) -> list[Stream]:
        """The prefetches the user left (neither typing the suggestion nor past it)."""
        left = []
        for stream in streams:
            if stream.source is None or stream.waiters:
                continue
            anchor, start, accepted = stream.source
            typing_it = (
                req.anchor == anchor
                and req.line_prefix.startswith(start)
                and accepted.startswith(req.line_prefix)
            )
            if not (typing_it or stream.followed_by(req, latency, now)):
                left.append(stream)
        return left

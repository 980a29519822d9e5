"""Counters and latency percentiles behind ``scopecache/stats``.

One ``ServerStats`` object is owned by the server and passed to whoever
records into it; there is no module-level state. Latencies are kept in
bounded reservoirs (the most recent ``window`` samples per source), so memory
stays flat however long the session runs.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

#: the sources a suggestion can be served from, as reported in stats
SOURCES = ("exact", "typed", "inflight", "l2", "upstream", "speculative")

#: why a suggestion was held back (``completion/gate.py``), as ``heldBack`` names them
HELD_BACK = ("unsure", "lowKept", "repeat", "whitespace")

#: latency samples kept per source
DEFAULT_WINDOW = 4096


def percentile(samples: Iterable[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by nearest rank; 0.0 for no samples."""
    ordered = sorted(samples)
    if not ordered:
        return 0.0
    rank = max(0, min(len(ordered) - 1, round(q / 100.0 * (len(ordered) - 1))))
    return ordered[rank]


@dataclass
class ServerStats:
    """What the server has done so far."""

    window: int = DEFAULT_WINDOW
    requests: int = 0
    #: requests by the document's language (its canonical languageId)
    requests_by_language: Counter[str] = field(default_factory=Counter)
    served: Counter[str] = field(default_factory=Counter)
    empty: int = 0
    errors: int = 0
    cancelled: int = 0
    upstream_requests: int = 0
    upstream_errors: int = 0
    speculative_requests: int = 0
    #: speculative prefetches answered by the shared L2 (no upstream request)
    speculative_l2_prefetches: int = 0
    #: suggestions served from those answers
    speculative_l2_served: int = 0
    #: prefetches that only looked in the shared L2 (after a suggestion from it) and found nothing
    speculative_l2_unanswered: int = 0
    #: cut-off streams whose finished lines were kept (marked cut) in L1 and L2
    cut_answers_kept: int = 0
    rejected_stale: int = 0
    #: suggestions not shown because of text after the cursor (``completion.midLine``)
    mid_line_suppressed: int = 0
    #: suggestions found but not shown, by reason (``HELD_BACK``)
    held_back: Counter[str] = field(default_factory=Counter)
    accepted: int = 0
    keystrokes: int = 0
    _latency: dict[str, deque[float]] = field(default_factory=dict)

    def record_served(self, source: str, latency_ms: float) -> None:
        """Count a suggestion served from ``source`` after ``latency_ms``."""
        self.served[source] += 1
        self._samples(source).append(latency_ms)

    def record_empty(self, latency_ms: float) -> None:
        """Count a request answered with no suggestion."""
        self.empty += 1
        self._samples("empty").append(latency_ms)

    def _samples(self, source: str) -> deque[float]:
        samples = self._latency.get(source)
        if samples is None:
            samples = self._latency[source] = deque(maxlen=self.window)
        return samples

    def latency(self, sources: Iterable[str] = SOURCES) -> dict[str, float]:
        """p50/p95/p99 in milliseconds over served requests from ``sources``."""
        merged: list[float] = []
        for source in sources:
            merged.extend(self._latency.get(source, ()))
        return {
            "p50": round(percentile(merged, 50), 3),
            "p95": round(percentile(merged, 95), 3),
            "p99": round(percentile(merged, 99), 3),
        }

    def snapshot(self) -> dict[str, Any]:
        """The JSON object ``scopecache/stats`` answers (before cache/transport parts)."""
        served = {source: self.served.get(source, 0) for source in SOURCES}
        total_served = sum(served.values())
        return {
            "requests": self.requests,
            "served": served,
            "empty": self.empty,
            "errors": self.errors,
            "cancelled": self.cancelled,
            "hitRatio": round((total_served - served["upstream"]) / self.requests, 4)
            if self.requests
            else 0.0,
            "upstreamRequests": self.upstream_requests,
            "upstreamErrors": self.upstream_errors,
            "speculativeRequests": self.speculative_requests,
            "speculativeL2": {
                "prefetches": self.speculative_l2_prefetches,
                "served": self.speculative_l2_served,
                "unanswered": self.speculative_l2_unanswered,
            },
            "cutAnswersKept": self.cut_answers_kept,
            "rejectedStale": self.rejected_stale,
            "midLineSuppressed": self.mid_line_suppressed,
            "heldBack": {reason: self.held_back.get(reason, 0) for reason in HELD_BACK},
            "accepted": self.accepted,
            "keystrokes": self.keystrokes,
            "latencyMs": {
                **self.latency(),
                "hit": self.latency(s for s in SOURCES if s != "upstream"),
                "miss": self.latency(("upstream",)),
            },
        }

    def reset(self) -> None:
        """Zero every counter (used by tests and the replay tool)."""
        fresh = ServerStats(window=self.window)
        self.__dict__.update(fresh.__dict__)

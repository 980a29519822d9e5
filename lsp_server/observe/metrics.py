"""The metrics registry: golden signals of one server, in base units.

One ``MetricsRegistry`` is owned by the server (``server.metrics``) and
handed to whoever records into it; nothing here is module-level state. It
keeps what ``ServerStats`` does not: request counts by method, source and
outcome, latency histograms (seconds, Prometheus-style cumulative buckets
plus a bounded reservoir for percentiles), upstream time to first token and
total time, per-keystroke update time, and a short history of signal samples
(one per ``sample_interval``) that the dashboard draws and the root-cause
hints (``lsp_server.observe.hints``) read.

The exporters (``lsp_server.observe.prometheus``, ``lsp_server.observe.endpoint``)
only read from it.
"""

from __future__ import annotations

import contextlib
import logging
import time
from bisect import bisect_left
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lsp_server.observe.stats import percentile
from transport.backend import CompletionBackend, CompletionRequest
from transport.errors import TransportError

logger = logging.getLogger(__name__)

#: request and upstream latency buckets, seconds
LATENCY_BUCKETS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
#: document update (keystroke) buckets, seconds
KEYSTROKE_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1)
#: samples kept per histogram for percentiles
DEFAULT_RESERVOIR = 2048
#: signal samples kept (at one per second: ten minutes)
DEFAULT_HISTORY = 600
DEFAULT_SAMPLE_INTERVAL = 1.0

#: request outcomes
OUTCOMES = ("served", "empty", "cancelled", "error")

Clock = Callable[[], float]


class Histogram:
    """Observations in fixed buckets (for Prometheus) and a recent reservoir (percentiles)."""

    def __init__(self, bounds: Iterable[float], *, reservoir: int = DEFAULT_RESERVOIR) -> None:
        self.bounds = tuple(sorted(bounds))
        self._counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0
        self.count = 0
        self._recent: deque[float] = deque(maxlen=reservoir)

    def observe(self, value: float) -> None:
        """Record one observation (seconds)."""
        self._counts[bisect_left(self.bounds, value)] += 1  # first bucket with value <= bound
        self.sum += value
        self.count += 1
        self._recent.append(value)

    def cumulative(self) -> list[tuple[float, int]]:
        """``(upper bound, observations <= bound)`` pairs, ending with ``inf``."""
        out: list[tuple[float, int]] = []
        running = 0
        for bound, count in zip((*self.bounds, float("inf")), self._counts, strict=True):
            running += count
            out.append((bound, running))
        return out

    def percentile_ms(self, q: float) -> float:
        """The ``q``-th percentile of recent observations, in milliseconds."""
        return round(percentile(self._recent, q) * 1000.0, 3)

    def summary(self) -> dict[str, float]:
        """``count`` and p50/p95/p99 in milliseconds (for JSON)."""
        return {
            "count": self.count,
            "p50": self.percentile_ms(50),
            "p95": self.percentile_ms(95),
            "p99": self.percentile_ms(99),
        }


@dataclass(frozen=True, slots=True)
class UpstreamCall:
    """One finished upstream request, as measured by the pipeline (no user text)."""

    request_id: str
    source: str
    status: str
    ttft: float | None
    total: float
    chars: int
    connection: str


@dataclass(frozen=True, slots=True)
class Sample:
    """Signals at one moment: monotonic ``t``, wall-clock ``wall``, named values."""

    t: float
    wall: float
    values: Mapping[str, float]


class MetricsRegistry:
    """Counters, histograms and signal history of one server."""

    def __init__(
        self,
        *,
        clock: Clock = time.monotonic,
        wall_clock: Clock = time.time,
        history: int = DEFAULT_HISTORY,
        sample_interval: float = DEFAULT_SAMPLE_INTERVAL,
    ) -> None:
        self._clock = clock
        self._wall = wall_clock
        self.sample_interval = sample_interval
        self.requests: Counter[tuple[str, str, str]] = Counter()
        self.request_duration: dict[str, Histogram] = {}
        self.upstream_ttft = Histogram(LATENCY_BUCKETS)
        self.upstream_duration = Histogram(LATENCY_BUCKETS)
        self.upstream_outcomes: Counter[str] = Counter()
        self.upstream_connections: Counter[str] = Counter()
        self.upstream_chars = 0
        self.keystroke = Histogram(KEYSTROKE_BUCKETS)
        self.history: deque[Sample] = deque(maxlen=history)

    # -- recording -------------------------------------------------------------------

    def record_request(self, method: str, source: str, outcome: str, seconds: float) -> None:
        """Count one completion request; served ones also feed the latency histogram."""
        self.requests[(method, source, outcome)] += 1
        if outcome == "served":
            histogram = self.request_duration.get(source)
            if histogram is None:
                histogram = self.request_duration[source] = Histogram(LATENCY_BUCKETS)
            histogram.observe(seconds)

    def record_upstream(self, call: UpstreamCall) -> None:
        """Count one upstream request and log it as one structured line (debug)."""
        self.upstream_outcomes[call.status] += 1
        self.upstream_connections[call.connection] += 1
        self.upstream_chars += call.chars
        if call.ttft is not None:
            self.upstream_ttft.observe(call.ttft)
        self.upstream_duration.observe(call.total)
        logger.debug(
            "upstream request id=%s source=%s status=%s ttft_ms=%s total_ms=%.1f chars=%d "
            "connection=%s",
            call.request_id,
            call.source,
            call.status,
            "-" if call.ttft is None else f"{call.ttft * 1000.0:.1f}",
            call.total * 1000.0,
            call.chars,
            call.connection,
        )

    def record_keystroke(self, seconds: float) -> None:
        """Time spent applying one ``didChange`` (text and syntax tree)."""
        self.keystroke.observe(seconds)

    # -- history ---------------------------------------------------------------------

    def sample_due(self) -> bool:
        """Whether ``sample_interval`` has passed since the last sample."""
        return not self.history or self._clock() - self.history[-1].t >= self.sample_interval

    def add_sample(self, values: Mapping[str, float]) -> Sample:
        """Append a signal sample taken now."""
        sample = Sample(self._clock(), self._wall(), dict(values))
        self.history.append(sample)
        return sample

    def window(self, seconds: float) -> list[Sample]:
        """Samples of the last ``seconds`` (oldest first)."""
        since = self._clock() - seconds
        return [s for s in self.history if s.t >= since]

    def now(self) -> float:
        """The registry's clock (monotonic seconds)."""
        return self._clock()

    # -- reading ---------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The ``metrics`` part of ``scopecache/stats`` (milliseconds, JSON-ready)."""
        by_outcome: Counter[str] = Counter()
        by_method: Counter[str] = Counter()
        for (method, _source, outcome), count in self.requests.items():
            by_outcome[outcome] += count
            by_method[method] += count
        return {
            "requestsByOutcome": {o: by_outcome.get(o, 0) for o in OUTCOMES},
            "requestsByMethod": dict(by_method),
            "latencyBySourceMs": {s: h.summary() for s, h in sorted(self.request_duration.items())},
            "upstreamTtftMs": self.upstream_ttft.summary(),
            "upstreamTotalMs": self.upstream_duration.summary(),
            "upstreamOutcomes": dict(self.upstream_outcomes),
            "upstreamConnections": dict(self.upstream_connections),
            "keystrokeMs": self.keystroke.summary(),
        }

    def history_json(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The signal history for the dashboard, oldest first."""
        samples = list(self.history)[-limit:] if limit else list(self.history)
        return [{"t": round(s.wall, 3), **s.values} for s in samples]


async def timed_stream(
    backend: CompletionBackend,
    request: CompletionRequest,
    metrics: MetricsRegistry,
    clock: Clock = time.perf_counter,
) -> AsyncIterator[str]:
    """``backend.stream(request)``, with its time to first token, total time and size recorded.

    Whether the request opened a new connection is read from the backend's
    ``connections_opened`` counter around it (approximate when requests overlap).
    """
    opened_before = backend.counters().connections_opened
    started = clock()
    ttft: float | None = None
    chars = 0
    status = "cancelled"
    try:
        async with contextlib.aclosing(backend.stream(request)) as chunks:  # type: ignore[type-var]
            async for chunk in chunks:
                if ttft is None:
                    ttft = clock() - started
                chars += len(chunk)
                yield chunk
        status = "ok"
    except TransportError as exc:
        status = f"error:{exc.kind}"
        raise
    finally:
        opened = backend.counters().connections_opened > opened_before
        metrics.record_upstream(
            UpstreamCall(
                request_id=request.request_id,
                source="speculative" if request.speculative else "upstream",
                status=status,
                ttft=ttft,
                total=clock() - started,
                chars=chars,
                connection="new" if opened else "reused",
            )
        )


def pool_state(backend: CompletionBackend | None, max_connections: int) -> dict[str, int]:
    """Connections of the backend's pool: ``open``, ``inUse``, ``idle`` and ``max``."""
    transport = getattr(backend, "transport", None)
    connections = getattr(transport, "connections", None)
    if not isinstance(connections, list):
        return {"open": 0, "inUse": 0, "idle": 0, "max": max_connections}
    http1 = getattr(transport, "http1", None)
    if http1 is not None:
        # HTTP/1.1 spares are connected but never used yet: idle, not in use.
        idle = len(connections) - int(http1.in_use())
    else:
        idle = sum(1 for c in connections if c.is_idle())
    return {
        "open": len(connections),
        "inUse": len(connections) - idle,
        "idle": idle,
        "max": max_connections,
    }

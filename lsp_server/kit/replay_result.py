"""What ``scopecache replay`` measured, and how it is shown.

``ReplayResult`` holds each completion request's ``RequestOutcome`` with the
server's and the reference service's stats; ``summary`` is the ``replay
--json`` object (DESIGN.md) and ``results_table`` its rich table. A trace a
server recorded with its suggestions and accepts also gets the recorded
session's ``acceptance`` (``lsp_server.kit.acceptance``): what the developer
accepted and kept then, the same numbers the live server reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.table import Table

from lsp_server.kit.acceptance import acceptance_rows
from lsp_server.observe.stats import SOURCES, percentile
from lsp_server.observe.trace.format import CompleteEvent

#: a suggestion shown within this many milliseconds of the keystroke is "instant"
INSTANT_MS = 10.0


@dataclass
class RequestOutcome:
    """What one completion request got."""

    text: str | None
    source: str | None
    latency_ms: float
    cancelled: bool = False
    error: str | None = None


@dataclass
class ReplayResult:
    """Everything a replay measured."""

    outcomes: list[tuple[CompleteEvent, RequestOutcome]] = field(default_factory=list)
    server_stats: dict[str, Any] = field(default_factory=dict)
    service_stats: dict[str, Any] | None = None
    wall_seconds: float = 0.0
    settings: dict[str, Any] = field(default_factory=dict)
    #: the recorded session's ``acceptance`` (None: the trace has no suggestions in it)
    acceptance: dict[str, Any] | None = None

    def summary(self) -> dict[str, Any]:
        """The ``replay --json`` object (DESIGN.md)."""
        served = dict.fromkeys(SOURCES, 0)
        useful = empty = errors = cancelled = 0
        hit: list[float] = []
        miss: list[float] = []
        for event, outcome in self.outcomes:
            if outcome.cancelled:
                cancelled += 1
                continue
            if outcome.error is not None:
                errors += 1
                continue
            if not outcome.text:
                empty += 1
                miss.append(outcome.latency_ms)
                continue
            source = outcome.source or "upstream"
            served[source] = served.get(source, 0) + 1
            (miss if source == "upstream" else hit).append(outcome.latency_ms)
            if event.expect is not None and _consistent(outcome.text, event.expect):
                useful += 1
        every = hit + miss
        answered = [o for _e, o in self.outcomes if o.text and not o.cancelled]
        instant = sum(1 for o in answered if o.latency_ms <= INSTANT_MS)
        never = len(self.outcomes) - len(answered)
        transport = self.server_stats.get("transport", {})
        result: dict[str, Any] = {
            "requests": len(self.outcomes),
            "served": served,
            "upstreamRequests": self.server_stats.get("upstreamRequests", 0),
            "useful": useful,
            "empty": empty,
            "errors": errors,
            "cancelled": cancelled,
            "latencyMs": {
                "hit": _percentiles(hit),
                "miss": _percentiles(miss),
                "all": _percentiles(every),
            },
            "wallSeconds": round(self.wall_seconds, 3),
            # time-aware figures: what the user felt
            "instant": round(instant / len(self.outcomes), 4) if self.outcomes else 0.0,
            "neverAnswered": never,
            "upstream": {
                "started": self.server_stats.get("upstreamRequests", 0),
                "completed": self.server_stats.get("upstreamCompleted", 0),
                "cancelled": self.server_stats.get("upstreamCancelled", 0),
                "speculative": self.server_stats.get("speculativeRequests", 0),
                "wastedChars": self.server_stats.get("wastedChars", 0),
            },
            "upstreamErrors": self.server_stats.get("upstreamErrors", 0),
            "provider": self.server_stats.get("provider", {}),
            "tokens": self.server_stats.get("tokens", {}),
            "rejectedStale": self.server_stats.get("rejectedStale", 0),
            "connectionsOpened": transport.get("connectionsOpened", 0),
            "protocol": transport.get("protocol", ""),
            "connectWaits": transport.get("connectWaits", 0),
            "dnsLookups": transport.get("dnsLookups", 0),
            "settings": self.settings,
        }
        if self.service_stats is not None:
            result["serviceRequests"] = _service_requests(self.service_stats)
        if self.acceptance is not None:
            result["acceptance"] = self.acceptance
        return result


def _consistent(suggestion: str, expect: str) -> bool:
    first = suggestion.split("\n", 1)[0]
    if not first:
        return False
    return first.startswith(expect) or expect.startswith(first)


def _percentiles(samples: list[float]) -> dict[str, float]:
    return {f"p{q}": round(percentile(samples, q), 3) for q in (50, 95, 99)}


def _service_requests(stats: Mapping[str, Any]) -> int:
    requests = stats.get("requests", 0)
    if isinstance(requests, Mapping):
        return int(requests.get("total", sum(v for v in requests.values() if isinstance(v, int))))
    return int(requests)


def failed_requests(summary: Mapping[str, Any]) -> int:
    """How many requests of a replay summary failed (error answers or upstream errors)."""
    return int(summary.get("errors", 0)) + int(summary.get("upstreamErrors", 0))


def results_table(summary: Mapping[str, Any], title: str = "replay") -> Table:
    """A rich table of a replay summary."""
    table = Table(title=title)
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("requests", str(summary["requests"]))
    for source, count in summary["served"].items():
        table.add_row(f"served from {source}", str(count))
    table.add_row("empty", str(summary["empty"]))
    table.add_row(
        "errors (answers / upstream)",
        f"{summary.get('errors', 0)} / {summary.get('upstreamErrors', 0)}",
    )
    table.add_row("useful", str(summary["useful"]))
    table.add_row("upstream requests", str(summary["upstreamRequests"]))
    lat = summary["latencyMs"]
    for kind in ("hit", "miss"):
        table.add_row(f"{kind} latency p50 / p95 (ms)", f"{lat[kind]['p50']} / {lat[kind]['p95']}")
    table.add_row("connections opened", str(summary["connectionsOpened"]))
    if summary.get("protocol") == "http/1.1":
        table.add_row("requests that waited for a connect", str(summary["connectWaits"]))
    table.add_row("DNS lookups", str(summary["dnsLookups"]))
    table.add_row("instant (<= 10 ms)", f"{100 * summary['instant']:.1f}%")
    table.add_row("never answered before the next keystroke", str(summary["neverAnswered"]))
    up = summary["upstream"]
    table.add_row(
        "upstream started / completed / cancelled",
        f"{up['started']} / {up['completed']} / {up['cancelled']}",
    )
    table.add_row("speculative requests", str(up["speculative"]))
    table.add_row("wasted streamed characters", str(up["wastedChars"]))
    for measure, value in acceptance_rows(summary.get("acceptance") or {}):
        table.add_row(f"recorded: {measure}", value)
    table.add_row("wall seconds", str(summary["wallSeconds"]))
    return table

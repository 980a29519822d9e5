"""``scopecache replay``: drive a real server process with a recorded session.

The trace's events are sent as an editor would send them: didOpen, didChange,
inlineCompletion (or completion), didClose; in real-time mode a completion
still outstanding when the next change arrives is cancelled with
``$/cancelRequest``, as editors do. By default a reference service is started
on loopback over the trace's final texts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from lsp_server.client import ServerProcess
from lsp_server.settings import SettingsFileError, load_toml
from lsp_server.stats import SOURCES, percentile
from lsp_server.trace import ChangeEvent, CloseEvent, CompleteEvent, OpenEvent, Trace
from lsp_server.trace_reader import read_trace
from lsp_server.upstream_process import ReferenceProcess

#: a suggestion shown within this many milliseconds of the keystroke is "instant"
INSTANT_MS = 10.0

#: the model name the replay uses against the reference service
REFERENCE_MODEL = "reference"


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
            "rejectedStale": self.server_stats.get("rejectedStale", 0),
            "connectionsOpened": transport.get("connectionsOpened", 0),
            "dnsLookups": transport.get("dnsLookups", 0),
            "settings": self.settings,
        }
        if self.service_stats is not None:
            result["serviceRequests"] = _service_requests(self.service_stats)
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


def _item_source(item: types.InlineCompletionItem | types.CompletionItem) -> str | None:
    command = item.command
    if command is None or not command.arguments or len(command.arguments) < 2:
        return None
    meta = command.arguments[1]
    source = meta.get("source") if isinstance(meta, Mapping) else getattr(meta, "source", None)
    return source if isinstance(source, str) else None


def _item_text(item: Any) -> str:
    text = getattr(item, "insert_text", None)
    if text is None and getattr(item, "text_edit", None) is not None:
        return str(item.text_edit.new_text)
    return text if isinstance(text, str) else str(getattr(text, "value", ""))


class Replayer:
    """Sends one trace's events to one server process."""

    def __init__(self, server: ServerProcess, trace: Trace, *, speed: float = 0.0) -> None:
        self.server = server
        self.trace = trace
        self.speed = speed
        self.result = ReplayResult()
        self._pending: list[tuple[str, asyncio.Task[None]]] = []  # (request id, waiter)

    async def run(self, on_event: Callable[[], None] | None = None) -> ReplayResult:
        """Replay every event; returns the outcomes."""
        started = time.perf_counter()
        for event in self.trace.events:
            if self.speed > 0:
                delay = started + event.t / self.speed - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
            await self._send(event)
            if on_event is not None:
                on_event()
        await self._settle()
        self.result.wall_seconds = time.perf_counter() - started
        return self.result

    async def _send(self, event: Any) -> None:
        if isinstance(event, OpenEvent):
            self.server.open(event.uri, event.text, event.language_id)
        elif isinstance(event, ChangeEvent):
            self._cancel_pending()
            self.server.change(event.uri, [c.to_json() for c in event.changes])
        elif isinstance(event, CompleteEvent):
            msg_id, future = self._request(event)
            task = asyncio.ensure_future(self._outcome(event, future))
            if self.speed > 0:
                self._pending.append((msg_id, task))
            else:
                await task
        elif isinstance(event, CloseEvent):
            self._cancel_pending()
            self.server.close(event.uri)

    def _request(self, event: CompleteEvent) -> tuple[str, asyncio.Future[Any]]:
        pos = event.position
        if event.kind == "list":
            params: Any = types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=event.uri),
                position=types.Position(line=pos.line, character=pos.character),
            )
            return self.server.request(types.TEXT_DOCUMENT_COMPLETION, params)
        params = self.server.inline_params(event.uri, pos.line, pos.character)
        return self.server.request(types.TEXT_DOCUMENT_INLINE_COMPLETION, params)

    async def _outcome(self, event: CompleteEvent, future: asyncio.Future[Any]) -> None:
        started = time.perf_counter()
        outcome: RequestOutcome
        try:
            answer = await future
            items = list(getattr(answer, "items", None) or [])
            item = items[0] if items else None
            outcome = RequestOutcome(
                text=_item_text(item) if item is not None else None,
                source=_item_source(item) if item is not None else None,
                latency_ms=(time.perf_counter() - started) * 1000.0,
            )
        except asyncio.CancelledError:
            outcome = RequestOutcome(None, None, 0.0, cancelled=True)
        except Exception as exc:  # a JSON-RPC error answer
            cancelled = "cancel" in str(exc).lower()
            outcome = RequestOutcome(
                None, None, 0.0, cancelled=cancelled, error=None if cancelled else str(exc)
            )
        self.result.outcomes.append((event, outcome))

    def _cancel_pending(self) -> None:
        for msg_id, task in self._pending:
            if not task.done():
                self.server.cancel(msg_id)
        self._pending = [(m, t) for m, t in self._pending if not t.done()]

    async def _settle(self) -> None:
        if self._pending:
            await asyncio.gather(*(t for _u, t in self._pending), return_exceptions=True)
        self._pending.clear()


async def replay_trace(
    trace: Trace,
    *,
    endpoint: str | None = None,
    settings: Mapping[str, Any] | None = None,
    speed: float = 0.0,
    ttft_ms: float = 0.0,
    token_ms: float = 0.0,
    console: Console | None = None,
    env: Mapping[str, str] | None = None,
) -> ReplayResult:
    """Replay ``trace`` through a fresh server process; start a service if needed."""
    options: dict[str, Any] = {"cache": {"l2": "none"}, **dict(settings or {})}
    service: ReferenceProcess | None = None
    corpus_dir: Path | None = None
    if endpoint is None:
        service = ReferenceProcess([], ttft_ms=ttft_ms, token_ms=token_ms)
        corpus_dir = service.workdir / "corpus"
        corpus_dir.mkdir()
        for index, (uri, text) in enumerate(sorted(trace.header.final.items())):
            name = Path(uri).name or f"file{index}"
            (corpus_dir / f"{index:03d}-{name}").write_text(text, encoding="utf-8")
        service.corpus = [str(corpus_dir)]
        await service.start()
        options.setdefault("endpoint", service.url)
        options.setdefault("model", REFERENCE_MODEL)
        transport = dict(options.get("transport", {}))
        transport.setdefault("caFile", service.ca_file)
        options["transport"] = transport
    else:
        options["endpoint"] = endpoint
    try:
        async with ServerProcess(options, env=dict(env) if env is not None else None) as server:
            replayer = Replayer(server, trace, speed=speed)
            if console is not None:
                with _progress(console) as progress:
                    task = progress.add_task("replaying", total=len(trace.events))
                    result = await replayer.run(lambda: progress.advance(task))
            else:
                result = await replayer.run()
            result.server_stats = await server.stats()
        if service is not None:
            result.service_stats = await service.stats()
    finally:
        if service is not None:
            await service.stop()
    result.settings = {k: v for k, v in options.items() if k not in ("apiKey",)}
    return result


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


def results_table(summary: Mapping[str, Any], title: str = "replay") -> Table:
    """A rich table of a replay summary."""
    table = Table(title=title)
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("requests", str(summary["requests"]))
    for source, count in summary["served"].items():
        table.add_row(f"served from {source}", str(count))
    table.add_row("empty", str(summary["empty"]))
    table.add_row("useful", str(summary["useful"]))
    table.add_row("upstream requests", str(summary["upstreamRequests"]))
    lat = summary["latencyMs"]
    for kind in ("hit", "miss"):
        table.add_row(f"{kind} latency p50 / p95 (ms)", f"{lat[kind]['p50']} / {lat[kind]['p95']}")
    table.add_row("connections opened", str(summary["connectionsOpened"]))
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
    table.add_row("wall seconds", str(summary["wallSeconds"]))
    return table


def run(args: argparse.Namespace) -> int:
    """``scopecache replay``."""
    console = Console(stderr=True)
    try:
        trace = read_trace(args.trace)
    except (OSError, ValueError) as exc:
        console.print(f"[red]cannot read trace:[/red] {exc}")
        return 2
    settings: dict[str, Any] = {}
    if args.config:
        try:
            settings.update(load_toml(args.config))
        except SettingsFileError as exc:
            console.print(f"[red]{exc}[/red]")
            return 2
    cache = dict(settings.get("cache", {}))
    if args.policy is not None:
        cache["policy"] = args.policy
    if args.capacity is not None:
        cache["capacity"] = args.capacity
    cache.setdefault("l2", "none")
    settings["cache"] = cache
    result = asyncio.run(
        replay_trace(
            trace,
            endpoint=args.endpoint,
            settings=settings,
            speed=args.speed,
            ttft_ms=args.ttft_ms,
            token_ms=args.token_ms,
            console=None if args.json else console,
        )
    )
    summary = result.summary()
    if args.json:
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
    else:
        Console().print(results_table(summary))
    return 0

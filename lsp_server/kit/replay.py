"""``scopecache replay``: drive a real server process with a recorded session.

The trace's events are sent as an editor would send them: didOpen, didChange,
inlineCompletion (or completion), didClose; in real-time mode a completion
still outstanding when the next change arrives is cancelled with
``$/cancelRequest``, as editors do. Unless an endpoint is given (``--endpoint``
or ``endpoint`` in the ``--config`` file) a reference service is started on
loopback over the trace's final texts; a given endpoint is used with the
transport settings it came with. What it measured, and the ``--json``
summary, are ``replay_result``'s.

Exit codes: 0 every request was answered (a suggestion or none); 1 some
requests failed (upstream errors or error answers: the table's ``errors`` row
and a warning say how many); 2 bad usage or input (unknown ``--policy``, an
unreadable or malformed trace, a bad config file), or the reference service
it starts did not come up (its TLS needs the ``tls`` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lsprotocol import types
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from lsp_server.kit.acceptance import session_acceptance
from lsp_server.kit.client import ServerProcess
from lsp_server.kit.replay_result import (
    ReplayResult,
    RequestOutcome,
    failed_requests,
    results_table,
)
from lsp_server.kit.upstream_process import ReferenceProcess, UpstreamStartError
from lsp_server.observe.trace.format import (
    ChangeEvent,
    CloseEvent,
    CompleteEvent,
    OpenEvent,
    ShownEvent,
    Trace,
)
from lsp_server.observe.trace.reader import read_trace
from lsp_server.server.settings_codec import SettingsFileError, load_toml
from lsp_server.settings import POLICIES

#: the model name the replay uses against the reference service
REFERENCE_MODEL = "reference"

#: exit codes of ``scopecache replay``
EXIT_OK = 0
EXIT_REQUESTS_FAILED = 1
EXIT_USAGE = 2


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
    """Replay ``trace`` through a fresh server process.

    ``endpoint`` (or an ``endpoint`` in ``settings``) names the service to
    use, with the transport settings as given; without one, a reference
    service is started over the trace's final texts.
    """
    options: dict[str, Any] = {"cache": {"l2": "none"}, **dict(settings or {})}
    service: ReferenceProcess | None = None
    corpus_dir: Path | None = None
    if endpoint is None and not options.get("endpoint"):
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
    elif endpoint is not None:
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
    if any(isinstance(event, ShownEvent) for event in trace.events):
        result.acceptance = session_acceptance(trace.header, trace.events)
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


def run(args: argparse.Namespace) -> int:
    """``scopecache replay``."""
    console = Console(stderr=True)
    if args.policy is not None and args.policy not in POLICIES:
        console.print(
            f"scopecache replay: unknown policy {args.policy!r}; known: {', '.join(POLICIES)}"
        )
        return EXIT_USAGE
    try:
        trace = read_trace(args.trace)
    except (OSError, ValueError) as exc:
        console.print(f"[red]cannot read trace:[/red] {exc}")
        return EXIT_USAGE
    settings: dict[str, Any] = {}
    if args.config:
        try:
            settings.update(load_toml(args.config))
        except SettingsFileError as exc:
            console.print(f"[red]{exc}[/red]")
            return EXIT_USAGE
    cache = dict(settings.get("cache", {}))
    if args.policy is not None:
        cache["policy"] = args.policy
    if args.capacity is not None:
        cache["capacity"] = args.capacity
    cache.setdefault("l2", "none")
    settings["cache"] = cache
    try:
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
    except UpstreamStartError as exc:
        console.print(f"[red]scopecache replay:[/red] {escape(str(exc))}")
        return EXIT_USAGE
    summary = result.summary()
    if args.json:
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
    else:
        Console().print(results_table(summary))
    failed = failed_requests(summary)
    if failed:
        console.print(
            f"[yellow]warning:[/yellow] {failed} of {summary['requests']} requests failed "
            f"(upstream errors: {summary['upstreamErrors']}); check the endpoint and its "
            "transport settings, or run `scopecache diagnose`"
        )
        return EXIT_REQUESTS_FAILED
    return EXIT_OK

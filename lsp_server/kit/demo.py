"""``scopecache demo``: the product working, end to end, in under a minute.

1. start the reference completion service (TLS, HTTP/2) with emulated model
   latency over the sample files shipped in the package;
2. synthesize an editing session that writes (the beginning of) two of them,
   a Python file and a TypeScript one, to show that every language with a
   grammar gets scope keys;
3. replay it through a real ``scopecache serve`` process with the default
   cache, and - at the same time - through a second process with
   ``cache.policy = none``;
4. print both side by side: requests, where answers came from, upstream
   requests saved, hit and miss latency, connections and DNS lookups.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from lsp_server.kit.client import ServerProcess
from lsp_server.kit.replay import REFERENCE_MODEL, Replayer
from lsp_server.kit.synth.session import language_samples, sample_files, synthesize
from lsp_server.kit.upstream_process import ReferenceProcess, UpstreamStartError
from lsp_server.observe.trace.format import CompleteEvent, Trace

#: emulated model latency of the demo's service
DEMO_TTFT_MS = 30.0
DEMO_TOKEN_MS = 2.0
#: one line under the table: what each "served" source means
SOURCES_LEGEND = (
    "exact: same context as before; typed: you typed the start of a cached "
    "suggestion, the rest is served; inflight: joined a stream still running; "
    "speculative: fetched ahead for the line after an accepted suggestion; "
    "upstream: asked the service and waited"
)

#: lines of each sample file the demo session writes
DEMO_LINES = 20
DEMO_FILES = 2
#: the second language the demo writes
DEMO_SECOND_LANGUAGE = ".ts"


def demo_files() -> list[Path]:
    """The demo's files: a Python sample, then a TypeScript one."""
    second = [p for p in language_samples() if p.suffix == DEMO_SECOND_LANGUAGE]
    return [*sample_files()[:1], *second[:1], *sample_files()[1:]]


def demo_trace(seed: int, *, files: int = DEMO_FILES, lines: int = DEMO_LINES) -> Trace:
    """A synthesized session writing the first ``lines`` lines of ``files`` sample files."""
    texts: dict[str, str] = {}
    for path in demo_files()[:files]:
        head = "\n".join(path.read_text(encoding="utf-8").split("\n")[:lines]) + "\n"
        texts[f"file:///demo/{path.name}"] = head
    return synthesize(texts, seed=seed)


async def run_demo(
    seed: int, console: Console | None, *, ttft_ms: float = DEMO_TTFT_MS
) -> dict[str, Any]:
    """Run the demo; returns both summaries."""
    trace = demo_trace(seed)
    requests = sum(isinstance(e, CompleteEvent) for e in trace.events)
    corpus = [str(p) for p in language_samples()]
    async with ReferenceProcess(corpus, ttft_ms=ttft_ms, token_ms=DEMO_TOKEN_MS) as service:
        base: dict[str, Any] = {
            "endpoint": service.url,
            "model": REFERENCE_MODEL,
            "transport": {"caFile": service.ca_file},
        }
        runs = {
            "scopecache (hybrid)": {**base, "cache": {"policy": "hybrid", "l2": "none"}},
            "no cache (policy=none)": {**base, "cache": {"policy": "none", "l2": "none"}},
        }
        progress = _progress(console)
        with progress:
            results = await asyncio.gather(
                *(
                    _one_run(trace, options, progress, name, requests)
                    for name, options in runs.items()
                )
            )
        service_stats = await service.stats()
    summaries = dict(zip(runs, results, strict=True))
    return {
        "trace": {"requests": requests, "events": len(trace.events), "seed": seed},
        "service": {"ttftMs": ttft_ms, "tokenMs": DEMO_TOKEN_MS, "stats": service_stats},
        "runs": summaries,
    }


async def _one_run(
    trace: Trace, options: Mapping[str, Any], progress: Progress, name: str, total: int
) -> dict[str, Any]:
    task = progress.add_task(name, total=len(trace.events))
    async with ServerProcess(options) as server:
        replayer = Replayer(server, trace)
        result = await replayer.run(lambda: progress.advance(task))
        result.server_stats = await server.stats()
    result.settings = dict(options)
    return result.summary()


def _progress(console: Console | None) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description:<24}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("events"),
        TimeElapsedColumn(),
        console=console or Console(stderr=True),
        disable=console is None,
    )


def demo_table(report: Mapping[str, Any]) -> Table:
    """The side-by-side results table."""
    runs = report["runs"]
    names = list(runs)
    service = report["service"]
    table = Table(
        title=(
            f"scopecache demo: {report['trace']['requests']} completion requests, "
            f"service TTFT {service['ttftMs']:.0f} ms + {service['tokenMs']:.0f} ms/token"
        )
    )
    table.add_column("")
    for name in names:
        table.add_column(name, justify="right")

    def row(label: str, get: Any) -> None:
        table.add_row(label, *(str(get(runs[n])) for n in names))

    row("requests", lambda r: r["requests"])
    for source in ("exact", "typed", "inflight", "speculative", "upstream"):
        row(f"served: {source}", lambda r, s=source: r["served"].get(s, 0))
    row("no suggestion", lambda r: r["empty"])
    row("useful suggestions", lambda r: r["useful"])
    row("upstream requests", lambda r: r["upstreamRequests"])
    baseline = runs[names[-1]]["upstreamRequests"] or 1
    row("upstream requests saved", lambda r: f"{100 * (1 - r['upstreamRequests'] / baseline):.1f}%")
    for kind in ("hit", "miss", "all"):
        row(f"{kind} latency p50 / p95 ms", lambda r, k=kind: _latency_cell(r, k))
    row("answered within 10 ms", lambda r: f"{100 * r['instant']:.1f}%")
    row("connections opened", lambda r: r["connectionsOpened"])
    row("DNS lookups", lambda r: r["dnsLookups"])
    row("wall seconds", lambda r: r["wallSeconds"])
    table.caption = SOURCES_LEGEND
    return table


def _latency_cell(run: Mapping[str, Any], kind: str) -> str:
    """``p50 / p95`` of one latency split, or ``-`` when no request fell in it."""
    served = run["served"]
    hits = sum(n for source, n in served.items() if source != "upstream")
    misses = served.get("upstream", 0) + run["empty"]
    count = {"hit": hits, "miss": misses, "all": hits + misses}[kind]
    if not count:
        return "-"
    figures = run["latencyMs"][kind]
    return f"{figures['p50']:.1f} / {figures['p95']:.1f}"


def run(args: argparse.Namespace) -> int:
    """``scopecache demo``: 0 done; 2 the reference service did not start (the message says why)."""
    console = Console(stderr=True)
    if not args.json:
        trace = demo_trace(args.seed)
        requests = sum(isinstance(e, CompleteEvent) for e in trace.events)
        console.print(
            "[bold]scopecache demo[/bold]: reference service (TLS, HTTP/2) + synthesized "
            "editing session, replayed through two real server processes\n"
            f"the bars count the session's {len(trace.events)} events (opens, edits and "
            f"{requests} completion requests); the table counts the completion requests"
        )
        names = ", ".join(p.name for p in demo_files()[:DEMO_FILES])
        console.print(f"the session writes {names}: each language with a grammar gets scope keys")
    try:
        report = asyncio.run(run_demo(args.seed, None if args.json else console))
    except UpstreamStartError as exc:
        console.print(f"[red]scopecache demo:[/red] {escape(str(exc))}")
        return 2
    if args.json:
        json.dump(report, sys.stdout)
        sys.stdout.write("\n")
    else:
        Console().print(demo_table(report))
    return 0

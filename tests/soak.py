"""Soak run (``make soak``): long synthesized sessions through one real server for N minutes.

One ``scopecache serve`` process (SQLite L2 in a temporary directory) and one
reference service over TLS serve round after round of synthesized editing
sessions, each over the shipped sample files with a new seed and new URIs,
as fast as the server answers. After every round the server's RSS
(/proc/PID/status), its cache size and the round's latency percentiles are
sampled. The table shows memory over time, latency drift (late rounds
against early ones) and errors; the exit status is 1 when a request failed
or RSS grew by more than ``--max-growth-mb`` after the first round.

    python -m tests.soak --minutes 10 [--capacity 2048] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from lsp_server.kit.client import ServerProcess
from lsp_server.kit.replay import Replayer
from lsp_server.kit.synth.session import sample_files, synthesize
from lsp_server.kit.upstream_process import ReferenceProcess
from lsp_server.observe.trace.format import Trace


@dataclass
class Sample:
    """The server after one round."""

    round: int
    elapsed_s: float
    events: int
    requests: int
    errors: int
    rss_mb: float
    cache_size: int
    p50_ms: float
    p95_ms: float
    #: the cycle collector's full passes so far, and the longest of them
    gc_full_passes: int
    gc_longest_ms: float


def rss_mb(pid: int) -> float:
    """Resident set size in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100.0 * (len(ordered) - 1))))]


def session(round_no: int) -> Trace:
    """A synthesized session over the sample files, with URIs of its own."""
    texts = {
        f"file:///soak/round{round_no}/{path.name}": path.read_text(encoding="utf-8")
        for path in sample_files()
    }
    return synthesize(texts, seed=round_no, nonlinear=0.3 if round_no % 2 else 0.0)


async def soak(minutes: float, capacity: int, console: Console) -> list[Sample]:
    """Replay rounds for ``minutes``; one sample per round."""
    workdir = Path(tempfile.mkdtemp(prefix="scopecache-soak-"))
    service = ReferenceProcess(sample_files())
    await service.start()
    options = {
        "endpoint": service.url,
        "model": "soak",
        "transport": {"caFile": service.ca_file},
        "cache": {"capacity": capacity, "l2": "sqlite", "sqlitePath": str(workdir / "l2.sqlite")},
    }
    samples: list[Sample] = []
    try:
        async with ServerProcess(options, log_file=workdir / "server.log") as server:
            assert server.pid is not None
            started = time.monotonic()
            round_no = 0
            while time.monotonic() - started < minutes * 60.0:
                trace = session(round_no)
                result = await Replayer(server, trace).run()
                latencies = [o.latency_ms for _e, o in result.outcomes if not o.cancelled]
                stats = await server.stats()
                sample = Sample(
                    round=round_no,
                    elapsed_s=round(time.monotonic() - started, 1),
                    events=len(trace.events),
                    requests=len(result.outcomes),
                    errors=sum(1 for _e, o in result.outcomes if o.error is not None),
                    rss_mb=round(rss_mb(server.pid), 1),
                    cache_size=int(stats["cache"]["size"]),
                    p50_ms=round(percentile(latencies, 50), 2),
                    p95_ms=round(percentile(latencies, 95), 2),
                    gc_full_passes=int(stats["gc"]["fullPasses"]),
                    gc_longest_ms=float(stats["gc"]["fullPauseMs"]["max"]),
                )
                samples.append(sample)
                console.log(
                    f"round {round_no}: {sample.requests} requests, RSS {sample.rss_mb} MB, "
                    f"cache {sample.cache_size}, p50 {sample.p50_ms} ms"
                )
                round_no += 1
    finally:
        await service.stop()
    return samples


def verdict(samples: list[Sample], max_growth_mb: float) -> dict[str, Any]:
    """Memory growth, latency drift and errors over the run."""
    if not samples:
        return {"ok": False, "reason": "no rounds ran"}
    quarter = max(1, len(samples) // 4)
    early = statistics.median(s.p50_ms for s in samples[:quarter])
    late = statistics.median(s.p50_ms for s in samples[-quarter:])
    baseline = samples[0].rss_mb
    peak = max(s.rss_mb for s in samples)
    errors = sum(s.errors for s in samples)
    growth = round(samples[-1].rss_mb - baseline, 1)
    return {
        "rounds": len(samples),
        "requests": sum(s.requests for s in samples),
        "errors": errors,
        "rssFirstMb": baseline,
        "rssLastMb": samples[-1].rss_mb,
        "rssPeakMb": peak,
        "rssGrowthMb": growth,
        "p50EarlyMs": early,
        "p50LateMs": late,
        "latencyDrift": round(late / early, 3) if early > 0 else None,
        "gcFullPasses": samples[-1].gc_full_passes,
        "gcLongestMs": max(s.gc_longest_ms for s in samples),
        "ok": errors == 0 and peak - baseline <= max_growth_mb,
    }


def table(samples: list[Sample], summary: dict[str, Any]) -> Table:
    """Rounds (at most 20 rows, evenly spread) and the verdict."""
    out = Table(title="scopecache soak")
    columns = (
        "round", "elapsed s", "requests", "errors", "RSS MB", "cache", "p50 ms", "p95 ms",
        "full GCs", "longest GC ms",
    )  # fmt: skip
    for name in columns:
        out.add_column(name, justify="right")
    step = max(1, len(samples) // 20)
    shown = samples[::step]
    if samples and shown[-1] is not samples[-1]:
        shown.append(samples[-1])
    for s in shown:
        out.add_row(
            str(s.round), f"{s.elapsed_s:.0f}", str(s.requests), str(s.errors),
            f"{s.rss_mb:.1f}", str(s.cache_size), f"{s.p50_ms:.2f}", f"{s.p95_ms:.2f}",
            str(s.gc_full_passes), f"{s.gc_longest_ms:.1f}",
        )
    out.caption = (
        f"RSS {summary.get('rssFirstMb')} -> {summary.get('rssLastMb')} MB "
        f"(peak {summary.get('rssPeakMb')}), p50 drift x{summary.get('latencyDrift')}, "
        f"errors {summary.get('errors')}: {'OK' if summary.get('ok') else 'FAILED'}"
    )
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point: ``python -m tests.soak``."""
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=5.0, help="how long to run")
    parser.add_argument("--capacity", type=int, default=2048, help="L1 cache.capacity")
    parser.add_argument("--max-growth-mb", type=float, default=100.0,
                        help="allowed RSS growth after the first round")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    console = Console(stderr=args.json)
    samples = asyncio.run(soak(args.minutes, args.capacity, console))
    summary = verdict(samples, args.max_growth_mb)
    if args.json:
        print(json.dumps({"summary": summary, "rounds": [asdict(s) for s in samples]}))
    else:
        console.print(table(samples, summary))
    return 0 if summary.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())

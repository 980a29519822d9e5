"""End-to-end replay: the same synthesized sessions through real servers.

Rows: upstream requests and user-perceived latency (p50/p95) for
``cache.policy`` = ``hybrid`` and ``lru`` against ``none`` (every request goes
upstream), all through real ``scopecache serve`` processes and the reference
service; and, in process (``simulate``), the upstream requests of our scope
keys against the key designs of other clients.

The session writes the first lines of three standard-library modules and two
of the package's samples: ``FILE_LINES`` of each in ``make bench``,
``LONG_FILE_LINES`` with ``--long`` (policy none sends every request
upstream, and each costs the throttle's wait plus a round trip: the long
session's three replays took 25 minutes on the shared 2-core machine). The
simulated rows use the long session either way: in process it takes seconds.

Run: ``.venv/bin/python -m tests.bench.bench_replay [--quick] [--long]``.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from lsp_server.kit.replay import replay_trace
from lsp_server.kit.simulate import untimed as simulate
from lsp_server.kit.simulate.requests import collect_requests
from lsp_server.kit.synth.session import sample_files, synthesize
from lsp_server.observe.trace.format import Trace
from lsp_server.observe.trace.writer import write_trace
from tests.bench.rows import row

STDLIB = Path(sys.base_prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
FULL_FILES = ("textwrap.py", "shlex.py", "heapq.py")
#: lines of each file the session writes in ``make bench``, with ``--long``, with ``--quick``
FILE_LINES = 12
LONG_FILE_LINES = 100
QUICK_LINES = 8


def _head(text: str, lines: int) -> str:
    return "\n".join(text.split("\n")[:lines]) + "\n"


def _trace(quick: bool, long: bool = False) -> Trace:
    """The session: two samples' first lines (quick), or five files' first lines."""
    texts: dict[str, str] = {}
    if quick:
        for path in sample_files()[:2]:
            texts[f"file:///bench/{path.name}"] = _head(path.read_text(), QUICK_LINES)
        return synthesize(texts, seed=3)
    lines = LONG_FILE_LINES if long else FILE_LINES
    for name in FULL_FILES:
        path = STDLIB / name
        if path.exists():
            texts[path.as_uri()] = _head(path.read_text(), lines)
    for path in sample_files()[:2]:
        texts[f"file:///bench/{path.name}"] = _head(path.read_text(), lines)
    return synthesize(texts, seed=3)


async def _replays(trace: Trace) -> dict[str, dict[str, Any]]:
    out = {}
    for policy in ("none", "lru", "hybrid"):
        result = await replay_trace(
            trace, settings={"cache": {"policy": policy, "l2": "none"}}, ttft_ms=0.0
        )
        out[policy] = result.summary()
    return out


def run(quick: bool = False, long: bool = False) -> list[dict[str, Any]]:
    """Measure and return the rows (the replays of the long session with ``long``)."""
    trace = _trace(quick, long)
    summaries = asyncio.run(_replays(trace))
    none = summaries["none"]
    rows = []
    for policy in ("lru", "hybrid"):
        s = summaries[policy]
        rows.append(
            row(
                f"upstream requests, {policy} vs policy=none ({s['requests']} requests)",
                s["upstreamRequests"],
                none["upstreamRequests"],
                "requests",
            )
        )
        for q in ("p50", "p95"):
            rows.append(
                row(
                    f"user-perceived latency {q}, {policy} vs none",
                    s["latencyMs"]["all"][q],
                    none["latencyMs"]["all"][q],
                    "ms",
                )
            )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.jsonl"
        write_trace(path, trace if long or quick else _trace(quick, long=True))
        requests = collect_requests(path)
        results = simulate.simulate(
            requests,
            strategies=("scope", "prefix", "uri-prefix-suffix", "prefix-trie", "position"),
            policies=("hybrid",),
            capacities=(1024,),
        )
    scope = next(r for r in results if r.strategy == "scope")
    for result in results:
        if result.strategy == "scope":
            continue
        rows.append(
            row(
                f"simulated upstream requests, scope keys vs {result.strategy}",
                scope.upstream,
                result.upstream,
                "requests",
            )
        )
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv, "--long" in sys.argv):
        print(row)

"""Against a real llama.cpp server: what the cache saves, and what a miss costs.

The server is llama.cpp's own (the xllamacpp wheel) over the tiny
random-weight test model, on 127.0.0.1. Rows, each against a baseline in the
same run:

- a synthesized session replayed through ``scopecache serve`` with a warm
  cache (the SQLite L2 a first hybrid replay of the same session filled)
  against ``cache.policy = none`` (every request to the server): upstream
  requests and user-perceived latency p50 / p95. The tiny model's answers
  are gibberish, so typing never runs through a suggestion and a cold
  cache hits next to nothing: the warm replay is where the cache shows;
- miss overhead: the p50 latency of the replay's misses (policy none, the
  whole way through the language server, throttle off) over the p50 of the same number of
  direct, non-streamed ``/infill`` requests on one warm keep-alive connection
  (llama-server closes the connection after every streamed answer, so a
  direct streamed request would pay a connect each time).

The session writes the first ``SESSION_LINES`` lines of two samples
(``LONG_SESSION_LINES`` with ``--long``): the policy-none and cold replays
send nearly every request to the server, one after the other.

Run: ``.venv/bin/python -m tests.bench.bench_llamacpp [--quick] [--long]``.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from lsp_server.kit.replay import replay_trace
from lsp_server.kit.synth.session import sample_files, synthesize
from tests.bench.rows import row
from tests.support.llamacpp import LlamaCppServer, missing_reason

#: lines of each sample the session writes: make bench, --long, --quick
SESSION_LINES = 14
LONG_SESSION_LINES = 40
QUICK_SESSION_LINES = 4


def _texts(quick: bool, long: bool = False) -> dict[str, str]:
    lines = QUICK_SESSION_LINES if quick else LONG_SESSION_LINES if long else SESSION_LINES
    return {
        f"file:///bench/{path.name}": "\n".join(path.read_text().split("\n")[:lines]) + "\n"
        for path in sample_files()[:2]
    }


def _direct_ms(url: str, count: int) -> float:
    """p50 of ``count`` direct non-streamed /infill requests on one keep-alive connection."""
    body = {"input_prefix": "def area(radius):\n    return ", "input_suffix": "\n",
            "n_predict": 64, "temperature": 0.0, "stream": False, "cache_prompt": True}
    times = []
    with httpx.Client(timeout=30.0) as client:
        client.get(url + "/health")
        for index in range(count):
            body["input_prefix"] = f"def area{index}(radius):\n    return "
            started = time.perf_counter()
            client.post(url + "/infill", json=body).raise_for_status()
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def run(quick: bool = False, long: bool = False) -> list[dict[str, Any]]:
    """Measure and return the rows (over the long session with ``long``)."""
    reason = missing_reason()
    if reason is not None:
        raise RuntimeError(reason)
    trace = synthesize(_texts(quick, long), seed=5)
    with tempfile.TemporaryDirectory() as tmp, LlamaCppServer(Path(tmp), embedding=128) as server:
        l2 = {"l2": "sqlite", "sqlitePath": str(Path(tmp) / "l2.sqlite")}
        summaries = {}
        for name, cache in (("none", {"policy": "none", "l2": "none"}),
                            ("cold", {"policy": "hybrid", **l2}),
                            ("warm", {"policy": "hybrid", **l2})):
            # throttle off: the miss row measures the path, not the debounce
            settings = {"cache": cache, "speculative": {"enabled": False},
                        "throttle": {"minDelayMs": 0, "maxDelayMs": 0}}
            result = asyncio.run(replay_trace(trace, endpoint=server.url, settings=settings))
            summaries[name] = result.summary()
        none, hybrid = summaries["none"], summaries["warm"]
        misses = max(5, min(50, none["upstreamRequests"]))
        direct = _direct_ms(server.url, misses)
    rows = [
        row(f"upstream requests, warm-cache replay vs policy=none ({hybrid['requests']} requests)",
             hybrid["upstreamRequests"], none["upstreamRequests"], "requests"),
    ]
    for q in ("p50", "p95"):
        rows.append(row(f"user-perceived latency {q}, warm-cache replay vs none",
                         hybrid["latencyMs"]["all"][q], none["latencyMs"]["all"][q], "ms"))
    rows.append(row("miss latency p50 through scopecache vs a direct /infill (non-streamed, "
                     "keep-alive)",
                     none["latencyMs"]["miss"]["p50"], direct, "ms"))
    errors = sum(s["errors"] + s["upstreamErrors"] for s in summaries.values())
    if errors:
        raise RuntimeError(f"{errors} failed requests against llama.cpp")
    return rows


if __name__ == "__main__":
    from tests.bench.__main__ import table

    rows = run(quick="--quick" in sys.argv, long="--long" in sys.argv)
    print(table([{"suite": "llamacpp", **r} for r in rows]))

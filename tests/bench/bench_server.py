"""The language server's own costs, each against a baseline in the same run.

* hit round trip: an inline completion served from L1 through the real
  server over stdio, vs a bare pygls server answering a constant;
* miss overhead: an upstream-served completion through the server, vs a bare
  httpx request to the same reference service on a warm HTTP/2 connection
  plus the floor's LSP round trip;
* cold start: the first completion after ``initialize`` (DNS prefetch and
  pre-connect done in the background) vs a warm one, each after the same pause;
* memory: server RSS with 20 open 5,000-line files and a full L1;
* collector pause: a full pass of the cycle collector in a working server
  whose start-up objects were frozen, as ``scopecache serve`` freezes them
  (``lsp_server.server.heap``), vs one whose were not (``settle_probe``,
  each in a process of its own).

Run: ``.venv/bin/python -m tests.bench.bench_server [--quick]``.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from lsp_server.kit.client import ServerProcess
from lsp_server.kit.upstream_process import ReferenceProcess
from lsp_server.observe.stats import percentile
from tests.bench.bench_keystroke import python_source
from tests.bench.rows import row

HERE = Path(__file__).resolve().parent
URI = "file:///bench/app.py"
TEXT = "def greet(name):\n    message = "
LINE, COL = 1, 14
#: seconds between opening the document (or the last answer) and a timed request
THINK_TIME = 0.3
#: documents filling L1 at once in the memory row (their answers come from upstream)
FILL_BATCH = 32


async def _timed_requests(server: ServerProcess, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        await server.inline(URI, LINE, COL)
        samples.append((time.perf_counter() - started) * 1000.0)
    return samples


def _options(svc: ReferenceProcess, **extra: Any) -> dict[str, Any]:
    return {
        "endpoint": svc.url,
        "model": "bench",
        "transport": {"caFile": svc.ca_file},
        "cache": {"l2": "none"},
        "throttle": {"minDelayMs": 0, "maxDelayMs": 0},
        **extra,
    }


def _rss_kb(pid: int | None) -> int:
    if pid is None:
        return 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _measure(quick: bool) -> list[dict[str, Any]]:
    n = 60 if quick else 400
    rows: list[dict[str, Any]] = []
    corpus = HERE.parent.parent / "lsp_server" / "samples"
    async with ReferenceProcess([corpus, _corpus_file()]) as svc:
        floor_cmd = [sys.executable, str(HERE / "floor_server.py")]
        # Speculation off: a prefetch started after each miss would run alongside
        # the next measurement (and the interleaved baseline).
        options = _options(svc, speculative={"enabled": False})
        async with (
            ServerProcess({}, command=floor_cmd) as floor,
            ServerProcess(options) as server,
        ):
            floor.open(URI, TEXT)
            server.open(URI, TEXT)
            await _timed_requests(floor, 20)
            await _timed_requests(server, 20)  # the first one fills the cache
            # Interleaved, so that the machine's load drifts over both alike.
            floor_ms, hit_ms = [], []
            for _ in range(n):
                floor_ms.extend(await _timed_requests(floor, 1))
                hit_ms.extend(await _timed_requests(server, 1))
            for q in (50, 99):
                rows.append(
                    row(
                        f"hit round trip p{q} vs bare pygls constant",
                        percentile(hit_ms, q),
                        percentile(floor_ms, q),
                        "ms",
                    )
                )
            # misses (the cache cleared before each), interleaved with bare httpx requests
            miss_ms, bare_ms = [], []
            async with BareHttpx(svc) as bare:
                for _ in range(5):
                    await bare.timed()
                for _ in range(n // 4):
                    await server.clear_cache()
                    miss_ms.extend(await _timed_requests(server, 1))
                    bare_ms.append(await bare.timed())
        floor_p50 = percentile(floor_ms, 50)
        rows.append(
            row(
                "miss p50 vs bare httpx + LSP floor",
                percentile(miss_ms, 50),
                percentile(bare_ms, 50) + floor_p50,
                "ms",
            )
        )
        rows.append(
            row(
                "miss overhead over bare httpx + LSP floor (p50)",
                percentile(miss_ms, 50) - percentile(bare_ms, 50) - floor_p50,
                1.0,
                "ms",
            )
        )
        rows.extend(await _cold_start(svc, 3 if quick else 8))
        rows.append(await _memory(svc, quick))
    rows.append(await _collector_pause())
    return rows


async def _settle_probe(*args: str) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.bench.settle_probe", *args, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"settle_probe {' '.join(args)} exited with {proc.returncode}")
    result: dict[str, Any] = json.loads(out)
    return result


async def _collector_pause() -> dict[str, Any]:
    plain = await _settle_probe()
    settled = await _settle_probe("--settle")
    return row(
        "full collector pass, settled heap vs not (samples open, their L1 answers)",
        settled["fullPassMs"],
        plain["fullPassMs"],
        "ms",
    )


def _corpus_file() -> Path:
    path = Path("/tmp/scopecache-bench-corpus.py")
    path.write_text('def greet(name):\n    message = "Hello, " + name.title()\n')
    return path


class BareHttpx:
    """A bare httpx client streaming the same completion over a warm HTTP/2 connection."""

    def __init__(self, svc: ReferenceProcess) -> None:
        assert svc.ca_file is not None
        self.url = svc.url + "/completions"
        self.client = httpx.AsyncClient(
            http2=True, verify=ssl.create_default_context(cafile=svc.ca_file)
        )
        self.body = {
            "model": "bench", "prompt": TEXT, "suffix": "", "max_tokens": 64, "stream": True
        }  # fmt: skip

    async def timed(self) -> float:
        """One streamed request, read to the end; milliseconds."""
        started = time.perf_counter()
        async with self.client.stream("POST", self.url, json=self.body) as response:
            async for _ in response.aiter_lines():
                pass
        return (time.perf_counter() - started) * 1000.0

    async def __aenter__(self) -> BareHttpx:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.aclose()


async def _cold_start(svc: ReferenceProcess, rounds: int) -> list[dict[str, Any]]:
    first, warm = [], []
    # Speculation off: a prefetch started by the first answer would run alongside
    # the warm requests and slow them, flattering the ratio.
    options = _options(svc, speculative={"enabled": False})
    for _ in range(rounds):
        async with ServerProcess(options) as server:
            server.open(URI, TEXT)
            await asyncio.sleep(THINK_TIME)  # an editor's first keystroke comes later than this
            first.extend(await _timed_requests(server, 1))
            for _ in range(3):
                await server.clear_cache()
                # The same pause before each warm request: after an idle moment
                # any request costs about 1 ms more on loopback (processes wake
                # up), first or not, so back-to-back warm requests would charge
                # that wake-up to the first request.
                await asyncio.sleep(THINK_TIME)
                warm.extend(await _timed_requests(server, 1))
    return [
        row(
            "first completion after initialize vs warm, same pause before each (p50)",
            percentile(first, 50),
            percentile(warm, 50),
            "ms",
        )
    ]


async def _memory(svc: ReferenceProcess, quick: bool) -> dict[str, Any]:
    files = 4 if quick else 20
    lines = 1_000 if quick else 5_000
    async with ServerProcess(_options(svc, cache={"l2": "none", "capacity": 2048})) as server:
        await server.stats()
        baseline = _rss_kb(server.pid)
        source = python_source(lines)
        for i in range(files):
            server.open(f"file:///bench/f{i}.py", source)
        # fill L1 with distinct answers: one function name per document, each
        # opened, asked and closed as before, FILL_BATCH documents at a time
        fills = 200 if quick else 2048
        gate = asyncio.Semaphore(FILL_BATCH)

        async def fill(i: int) -> None:
            uri = f"file:///bench/m{i}.py"
            async with gate:
                server.open(uri, TEXT.replace("greet", f"greet{i}"))
                await server.inline(uri, LINE, COL)
                server.close(uri)

        await asyncio.gather(*(fill(i) for i in range(fills)))
        await server.stats()
        loaded = _rss_kb(server.pid)
    return row(
        f"server RSS, {files} x {lines}-line files + {fills} L1 entries vs idle",
        loaded / 1024,
        baseline / 1024,
        "MiB",
    )


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Measure and return the rows."""
    return asyncio.run(_measure(quick))


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(row)

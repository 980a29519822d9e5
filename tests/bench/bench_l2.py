"""L2 hit latency: SQLite and Redis against an L1 (dict) hit and a local HTTP round trip.

Every row is a median per-call latency compared with a baseline measured in
the same run: an in-process dict lookup (what an L1 hit costs at least) and
a keep-alive HTTP/1.1 request to a minimal server on 127.0.0.1 through
httpx (the floor of any upstream miss, before a model does any work).
Redis rows need /usr/bin/redis-server and are left out without it.

Run: ``.venv/bin/python -m tests.bench.bench_l2`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from cache.entry import CachedCompletion
from cache.keys import LineAnchor, ScopeKey
from cache.l2 import L2Store, SqliteStore
from tests.bench.rows import row
from tests.support.redis_server import RedisServer, redis_available

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"


def _entry(i: int) -> CachedCompletion:
    key = ScopeKey("python", "2-call-block", i, i * 7919)
    return CachedCompletion(
        key=key, anchor=LineAnchor("python", i, i * 7919), line_prefix="    ",
        text="result = compute(items, limit=10)\n" * 2,
    )


async def _median_us(call: Callable[[], Awaitable[object]], n: int) -> float:
    for _ in range(min(50, n)):  # warm up connections, caches and the executor thread
        await call()
    samples = []
    for _ in range(n):
        start = time.perf_counter_ns()
        await call()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


async def _serve_http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while await reader.readuntil(b"\r\n\r\n"):
            writer.write(RESPONSE)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _http_round_trip_us(n: int) -> float:
    server = await asyncio.start_server(_serve_http, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
            return await _median_us(lambda: client.get("/health"), n)
    finally:
        server.close()
        await server.wait_closed()


async def _store_hit_us(store: L2Store, n: int, entries: int) -> float:
    await store.start()
    try:
        for i in range(entries):
            await store.put(_entry(i))
        keys = [_entry(i).key for i in range(entries)]
        counter = iter(range(10**9))

        async def hit() -> object:
            got = await store.get(keys[next(counter) % entries])
            assert got is not None, "benchmark expects hits"
            return got

        return await _median_us(hit, n)
    finally:
        await store.aclose()


async def _measure(quick: bool) -> list[dict[str, object]]:
    n, entries = (300, 200) if quick else (3000, 2000)
    table = {_entry(i).key: _entry(i) for i in range(entries)}
    keys = list(table)
    counter = iter(range(10**9))

    async def dict_hit() -> object:
        return table[keys[next(counter) % entries]]

    l1 = await _median_us(dict_hit, n)
    http = await _http_round_trip_us(n)
    measured: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "l2.sqlite", "bench", poll_interval=0)
        measured["sqlite"] = await _store_hit_us(store, n, entries)
    if redis_available():
        from cache.l2.redis import RedisStore

        with RedisServer() as server:
            measured["redis"] = await _store_hit_us(RedisStore(server.url, "bench"), n, entries)
    rows = [row("L1 dict hit (baseline)", l1, l1, "us/get"),
            row("local HTTP round trip vs L1 hit", http, l1, "us/get")]
    for kind, value in measured.items():
        rows.append(row(f"{kind} L2 hit vs L1 hit", value, l1, "us/get"))
        rows.append(row(f"{kind} L2 hit vs local HTTP round trip", value, http, "us/get"))
    return rows


def run(quick: bool = False) -> list[dict[str, object]]:
    """Measure and return the rows ``{"name", "value", "baseline", "ratio", "unit"}``."""
    return asyncio.run(_measure(quick))


def main() -> None:
    """Print the rows as a table."""
    for made in run(quick="--quick" in sys.argv):
        print(
            f"{made['name']:<44} {made['value']:>10} {made['unit']:<8}"
            f" baseline {made['baseline']:>10}  ratio {made['ratio']}"
        )


if __name__ == "__main__":
    main()

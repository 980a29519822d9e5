"""Shared L2 through real server processes: SQLite across windows, Redis across machines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.client import ServerProcess
from lsp_server.kit.synth.session import synthesize
from lsp_server.kit.upstream_process import ReferenceProcess
from lsp_server.observe.trace.writer import write_trace
from tests.support.conditions import until
from tests.support.greet import TEXT, URI, requests_seen
from tests.support.redis_server import RedisServer, redis_available

pytestmark = pytest.mark.e2e


@pytest.fixture
def service(greet_process: ReferenceProcess) -> ReferenceProcess:
    return greet_process


def options(service: ReferenceProcess, **cache: Any) -> dict[str, Any]:
    return {
        "endpoint": service.url,
        "model": "m",
        "transport": {"caFile": service.ca_file},
        "cache": cache,
        "speculative": {"enabled": False},
    }


async def service_requests(service: ReferenceProcess) -> int:
    return requests_seen(await service.stats())


async def written_to_l2(server: ServerProcess) -> None:
    """Wait until ``server`` has written its answer to the shared L2 (writes are asynchronous)."""

    async def written() -> bool:
        return bool((await server.stats())["l2"]["puts"])

    await until(written, "the answer to be written to the shared L2")


async def ask_second(server: ServerProcess) -> dict[str, Any]:
    """Ask once; the answer must come from the shared L2 (or what it pushed to L1)."""
    assert await server.inline_text(URI, 1, 14) == '"Hello, " + name.title()'
    stats = await server.stats()
    assert stats["served"]["l2"] + stats["served"]["exact"] == 1, stats["served"]
    return stats


async def test_a_second_window_is_served_from_the_shared_sqlite_file(
    service: ReferenceProcess, tmp_path: Path
) -> None:
    db = tmp_path / "l2.sqlite"
    opts = options(service, l2="sqlite", sqlitePath=str(db))
    async with ServerProcess(opts) as first, ServerProcess(opts) as second:
        first.open(URI, TEXT)
        second.open(URI, TEXT)
        assert await first.inline_text(URI, 1, 14) == '"Hello, " + name.title()'
        assert await service_requests(service) == 1
        await written_to_l2(first)
        stats = await ask_second(second)
        assert stats["served"]["upstream"] == 0
        assert await service_requests(service) == 1


async def test_a_different_model_never_gets_the_answer(
    service: ReferenceProcess, tmp_path: Path
) -> None:
    db = tmp_path / "l2.sqlite"
    opts_a = options(service, l2="sqlite", sqlitePath=str(db))
    opts_b = {**opts_a, "model": "another-model"}
    async with ServerProcess(opts_a) as first:
        first.open(URI, TEXT)
        await first.inline_text(URI, 1, 14)
        await written_to_l2(first)  # the answer is there for the other model to miss
    async with ServerProcess(opts_b) as second:
        second.open(URI, TEXT)
        await second.inline_text(URI, 1, 14)
        stats = await second.stats()
        assert stats["served"]["upstream"] == 1 and stats["served"]["l2"] == 0
    assert await service_requests(service) == 2


async def test_prewarm_fills_l2_so_the_first_editor_asks_nobody(
    service: ReferenceProcess, tmp_path: Path
) -> None:
    db = tmp_path / "l2.sqlite"
    trace = synthesize({URI: TEXT + '"Hello, " + name.title()\n'}, seed=1)
    trace_path = tmp_path / "t.jsonl"
    write_trace(trace_path, trace)
    config = tmp_path / "team.toml"
    config.write_text(
        "[scopecache]\n"
        f'model = "m"\n'
        "[scopecache.cache]\n"
        f'l2 = "sqlite"\nsqlite_path = "{db}"\n'
        "[scopecache.transport]\n"
        f'ca_file = "{service.ca_file}"\n'
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "lsp_server",
            "prewarm",
            "--from",
            str(trace_path),
            "--config",
            str(config),
            "--endpoint",
            service.url,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(out.stdout)
    assert report["upstreamRequests"] >= 1 and report["l2"]["size"] >= 1
    before = await service_requests(service)
    async with ServerProcess(options(service, l2="sqlite", sqlitePath=str(db))) as editor:
        editor.open(URI, TEXT)
        # The session asked at the start of the body, where the answer has two
        # lines; L1 was prewarmed from L2, so the rest of it is served typed-through.
        text = await editor.inline_text(URI, 1, 14)
        assert text is not None and text.startswith('"Hello, " + name.title()')
        stats = await editor.stats()
        assert stats["served"]["upstream"] == 0
    assert await service_requests(service) == before


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    if not redis_available():
        pytest.skip("redis-server is not installed")
    with RedisServer() as server:
        yield server


async def test_two_servers_share_answers_through_redis(
    service: ReferenceProcess, redis: RedisServer
) -> None:
    env = {**os.environ, "SCOPECACHE_NAMESPACE_SECRET": "team-secret"}
    opts = options(service, l2="redis", redisUrl=redis.url)
    async with ServerProcess(opts, env=env) as first, ServerProcess(opts, env=env) as second:
        first.open(URI, TEXT)
        second.open(URI, TEXT)
        assert await first.inline_text(URI, 1, 14) == '"Hello, " + name.title()'
        await written_to_l2(first)
        stats = await ask_second(second)
        assert stats["served"]["upstream"] == 0
        assert await service_requests(service) == 1


async def test_redis_going_down_costs_no_completion(
    service: ReferenceProcess, redis: RedisServer
) -> None:
    env = {**os.environ, "SCOPECACHE_NAMESPACE_SECRET": "team-secret"}
    opts = options(service, l2="redis", redisUrl=redis.url)
    async with ServerProcess(opts, env=env) as server:
        server.open(URI, TEXT)
        redis.kill()
        assert await server.inline_text(URI, 1, 14) == '"Hello, " + name.title()'
        server.insert(URI, 1, 14, '"')
        assert await server.inline_text(URI, 1, 15) == 'Hello, " + name.title()'
        stats = await server.stats()
        assert stats["l2"]["state"] == "down"
        assert stats["served"]["upstream"] == 1 and stats["served"]["typed"] == 1

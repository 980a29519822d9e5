"""An L2 that fails mid-session is told to the user once, and its recovery once.

A real server process uses a real redis-server as its L2. Killing Redis
mid-session (a crash) must reach the editor as one ``window/showMessage``
however many keystrokes follow; when Redis is back, one more message says
so, and ``scopecache/stats`` no longer lists the problem.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from lsp_server.kit.client import ServerProcess
from tests.support.redis_server import RedisServer, redis_available

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not redis_available(), reason="redis-server is not installed"),
]

URI = "file:///work/project/outage.py"
TEXT = "def area(width, height):\n    return width * height\n"
DOWN = "shared cache unavailable"
BACK = "shared cache available again"


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def count(server: ServerProcess, text: str) -> int:
    return sum(text in m.message for m in server.messages)


async def test_redis_l2_outage_and_recovery_each_reach_the_user_once(
    redis_server: RedisServer,
) -> None:
    options = {
        "cache": {"l2": "redis", "redisUrl": redis_server.url},
        "speculative": {"enabled": False},
    }
    async with ServerProcess(options) as server:
        server.open(URI, TEXT)
        stats = await server.stats()
        assert stats["l2"]["kind"] == "redis"
        assert count(server, DOWN) == 0

        redis_server.kill()
        await asyncio.wait_for(_until(server, DOWN), 20)
        # Keystrokes while it is down: answered (without L2), not re-announced.
        for column in range(4):
            server.insert(URI, 2, column, "x")
            await server.inline_text(URI, 2, column + 1)
        stats = await server.stats()
        assert stats["l2"]["state"] == "down"
        assert "l2" in stats["problems"]

        redis_server.start()  # same port: Redis is back
        await asyncio.wait_for(_until(server, BACK), 20)
        stats = await server.stats()
        assert stats["l2"]["state"] == "up"
        assert "l2" not in stats["problems"]
        assert count(server, DOWN) == 1
        assert count(server, BACK) == 1


async def _until(server: ServerProcess, text: str) -> None:
    while count(server, text) == 0:
        await asyncio.sleep(0.02)

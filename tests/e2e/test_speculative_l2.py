"""A second editor on a warm shared L2 asks the service for (almost) nothing, prefetches included.

Two real ``scopecache serve`` processes replay the demo's editing session one
after the other against one reference service, sharing one SQLite file or
one Redis, with speculation on. The first fills the L2 (its misses, its
speculative prefetches, the finished lines of its cut-off streams); the
second must find those answers there, speculative ones too, instead of
asking upstream again, and must not speculate upstream where the first
window's user did not go.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.client import ServerProcess
from lsp_server.kit.demo import demo_trace
from lsp_server.kit.replay import REFERENCE_MODEL, Replayer
from lsp_server.kit.synth.session import sample_files
from lsp_server.kit.upstream_process import ReferenceProcess
from tests.support.conditions import until
from tests.support.redis_server import RedisServer, redis_available

pytestmark = pytest.mark.e2e

#: the second process may make at most this share of the first's upstream requests
WARM_SHARE = 0.05


async def replay_once(options: dict[str, Any], *, warm: bool) -> dict[str, Any]:
    async with ServerProcess(options) as server:

        async def ready() -> bool:
            # An editor window is opened before it is typed in: the L2 has
            # answered (connected, on a loaded machine that takes a while) and,
            # on a warm L2 with prewarm on, L1 holds the hottest entries.
            stats = await server.stats()
            prewarming = warm and options["cache"].get("prewarm", 1) != 0
            return bool(stats["l2"]["answered"]) and (stats["cache"]["size"] > 0 or not prewarming)

        await until(ready, "the shared L2 to answer")
        await Replayer(server, demo_trace(7)).run()
        return await server.stats()


async def assert_the_warm_window_asks_almost_nothing(l2: dict[str, Any]) -> dict[str, Any]:
    async with ReferenceProcess([str(p) for p in sample_files()]) as service:
        options = {
            "endpoint": service.url,
            "model": REFERENCE_MODEL,
            "transport": {"caFile": service.ca_file},
            "cache": l2,
            "speculative": {"enabled": True},
        }
        cold = await replay_once(options, warm=False)
        warm = await replay_once(options, warm=True)
    figures = ("upstreamRequests", "speculativeRequests", "speculativeL2", "served", "l2")
    report = {
        run: {k: stats[k] for k in figures} for run, stats in (("cold", cold), ("warm", warm))
    }
    tier = l2["l2"] + (" without prewarm" if l2.get("prewarm") == 0 else "")
    print(  # the figures, for -rP
        f"{tier}: first window {cold['upstreamRequests']} upstream requests "
        f"({cold['speculativeRequests']} speculative), second {warm['upstreamRequests']} "
        f"({warm['speculativeRequests']} speculative), "
        f"{warm['upstreamRequests'] / cold['upstreamRequests']:.1%}"
    )
    # Both windows speculated: the first upstream, the second from L2.
    assert cold["speculativeRequests"] > 0, "the session must exercise speculation"
    assert warm["speculativeL2"]["prefetches"] > 0, report
    assert warm["upstreamRequests"] <= WARM_SHARE * cold["upstreamRequests"], report
    return warm


async def test_a_second_window_on_a_warm_sqlite_l2_does_not_re_ask_speculative_prefetches(
    tmp_path: Path,
) -> None:
    await assert_the_warm_window_asks_almost_nothing(
        {"l2": "sqlite", "sqlitePath": str(tmp_path / "l2.sqlite")}
    )


async def test_without_prewarm_speculative_answers_come_from_l2_and_are_served(
    tmp_path: Path,
) -> None:
    warm = await assert_the_warm_window_asks_almost_nothing(
        {"l2": "sqlite", "sqlitePath": str(tmp_path / "l2.sqlite"), "prewarm": 0}
    )
    # Served from what L2 held: through the prefetch (speculativeL2.served) or,
    # when the request got there before the prefetch's lookup ended, directly.
    assert warm["speculativeL2"]["served"] + warm["served"]["l2"] > 0
    assert warm["served"]["speculative"] >= warm["speculativeL2"]["served"]


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    if not redis_available():
        pytest.skip("redis-server is not installed")
    with RedisServer() as server:
        yield server


async def test_a_second_window_on_a_warm_redis_l2_does_not_re_ask_speculative_prefetches(
    redis: RedisServer,
) -> None:
    await assert_the_warm_window_asks_almost_nothing({"l2": "redis", "redisUrl": redis.url})

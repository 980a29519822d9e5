"""``scopecache serve`` freezes its start-up objects out of the collector's passes."""

from __future__ import annotations

import pytest

from lsp_server.kit.client import ServerProcess
from tests.support.conditions import until

pytestmark = pytest.mark.e2e

#: far fewer objects than start-up leaves (lsprotocol's types, cattrs' functions, pygls)
START_UP_OBJECTS = 20_000


async def test_serve_settles_its_heap_at_the_end_of_start_up() -> None:
    async with ServerProcess({"cache": {"l2": "none"}}) as server:

        async def settled() -> bool:
            return bool((await server.stats())["gc"]["frozen"] > 0)

        await until(settled, "the start-up heap to be frozen")
        collector = (await server.stats())["gc"]
        assert collector["frozen"] > START_UP_OBJECTS
        assert set(collector["fullPauseMs"]) == {"last", "max", "total"}

"""Speculative prefetch through the real server and the reference service."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.kit.client import ServerProcess
from lsp_server.kit.upstream_process import ReferenceProcess
from tests.support.conditions import until, until_true
from tests.support.greet import URI, requests_seen

pytestmark = pytest.mark.e2e


@pytest.fixture
def service(greet_process: ReferenceProcess) -> ReferenceProcess:
    return greet_process


def options(service: ReferenceProcess, **speculative: object) -> dict[str, object]:
    return {
        "endpoint": service.url,
        "model": "m",
        "transport": {"caFile": service.ca_file},
        "cache": {"l2": "none"},
        "speculative": speculative,
    }


async def service_requests(service: ReferenceProcess) -> int:
    return requests_seen(await service.stats())


async def wait_for_requests(service: ReferenceProcess, count: int) -> None:
    async def seen() -> bool:
        return await service_requests(service) >= count

    await until(seen, f"{count} requests at the service")


async def test_next_line_is_served_from_a_speculative_prefetch(service: ReferenceProcess) -> None:
    async with ServerProcess(options(service)) as server:
        server.open(URI, "def greet(name):\n    message = ")
        shown = await server.inline_text(URI, 1, 14)
        assert shown == '"Hello, " + name.title()'
        await wait_for_requests(service, 2)  # the prefetch of the next line
        # The user accepts the suggestion and presses Enter; the editor indents.
        assert await service_requests(service) == 2
        server.insert(URI, 1, 14, shown + "\n    ")
        assert await server.inline_text(URI, 2, 4) == "return message.upper()"
        stats = await server.stats()
        # served without asking: the only upstream-served answer is the first one
        assert stats["served"]["speculative"] == 1
        assert stats["served"]["upstream"] == 1
        assert stats["speculativeRequests"] >= 1


async def test_typing_the_suggestion_by_hand_reaches_the_same_prefetched_answer(
    service: ReferenceProcess,
) -> None:
    async with ServerProcess(options(service)) as server:
        server.open(URI, "def greet(name):\n    message = ")
        shown = await server.inline_text(URI, 1, 14)
        assert shown is not None
        column = 14
        for char in shown:  # every keystroke is served typed-through
            server.insert(URI, 1, column, char)
            column += 1
            await server.inline_text(URI, 1, column)
        await wait_for_requests(service, 2)
        # one prefetch, however many typed-through suggestions were shown
        assert await service_requests(service) == 2
        server.insert(URI, 1, column, "\n    ")
        assert await server.inline_text(URI, 2, 4) == "return message.upper()"
        stats = await server.stats()
        assert stats["served"]["speculative"] == 1
        # every key but the first and the last, where only ")" was left: closers
        # alone are not shown (the editor closes them)
        assert stats["served"]["typed"] == len(shown) - 2
        assert stats["heldBack"]["whitespace"] == 1


async def test_no_speculation_when_disabled(service: ReferenceProcess) -> None:
    async with ServerProcess(options(service, enabled=False)) as server:
        server.open(URI, "def greet(name):\n    message = ")
        shown = await server.inline_text(URI, 1, 14)
        assert shown == '"Hello, " + name.title()'
        # What follows an answer (where its prefetch is decided) runs before the
        # server reads its next message: this round trip comes after it.
        assert (await server.stats())["speculativeRequests"] == 0
        # The user accepts and presses Enter: the next line is asked for now,
        # nothing was fetched ahead of it.
        server.insert(URI, 1, 14, shown + "\n    ")
        assert await server.inline_text(URI, 2, 4) == "return message.upper()"
        stats = await server.stats()
        assert stats["speculativeRequests"] == 0
        assert stats["served"]["speculative"] == 0 and stats["served"]["upstream"] == 2
    assert await service_requests(service) == 2


async def test_no_speculation_over_budget(service: ReferenceProcess, tmp_path: Path) -> None:
    log_file = tmp_path / "server.log"
    opts = options(service, maxPerMinute=0)
    async with ServerProcess(opts, log_file=log_file, log_level="DEBUG") as server:
        server.open(URI, "def greet(name):\n    message = ")
        assert await server.inline_text(URI, 1, 14) == '"Hello, " + name.title()'
        # The prefetch's timer fired and the budget turned it down.
        await until_true(
            lambda: "no speculation at line 1: over budget" in log_file.read_text(),
            "the prefetch to be turned down for its budget",
        )
        assert (await server.stats())["speculativeRequests"] == 0
    assert await service_requests(service) == 1

"""The real server process against the real reference service over TLS HTTP/2."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lsp_server.kit.client import ServerProcess
from lsp_server.kit.upstream_process import ReferenceProcess
from tests.support.conditions import until_true
from tests.support.greet import requests_seen

pytestmark = pytest.mark.e2e

CORPUS = """\
import math


def greet(name):
    message = "Hello, " + name.title()
    return message.upper()


def area(width, height):
    result = width * height + math.pi
    return round(result, 2)


class Account:
    def deposit(self, amount):
        self.balance = self.balance + amount
        return self.balance
"""

URI = "file:///work/project/app.py"


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[ReferenceProcess]:
    corpus = tmp_path / "corpus.py"
    corpus.write_text(CORPUS)
    async with ReferenceProcess([corpus]) as svc:
        yield svc


def options(service: ReferenceProcess, **cache: object) -> dict[str, object]:
    return {
        "endpoint": service.url,
        "provider": "openai",
        "model": "m",
        "transport": {"caFile": service.ca_file},
        "cache": {"l2": "none", **cache},
        # these tests count upstream requests exactly; prefetch has its own tests
        "speculative": {"enabled": False},
    }


async def upstream_count(service: ReferenceProcess) -> int:
    return requests_seen(await service.stats())


async def test_inline_completion_comes_from_the_service_and_repeats_from_cache(
    service: ReferenceProcess,
) -> None:
    async with ServerProcess(options(service)) as server:
        server.open(URI, "def greet(name):\n    message = ")
        first = await server.inline_text(URI, 1, 14)
        assert first == '"Hello, " + name.title()'
        assert await upstream_count(service) == 1

        second = await server.inline_text(URI, 1, 14)
        assert second == first
        assert await upstream_count(service) == 1

        stats = await server.stats()
        assert stats["requests"] == 2
        assert stats["served"]["upstream"] == 1
        assert stats["served"]["exact"] == 1
        for field in ("typed", "inflight", "l2"):
            assert stats["served"][field] == 0
        assert stats["upstreamRequests"] == 1
        assert stats["upstreamErrors"] == 0
        assert set(stats["latencyMs"]) >= {"p50", "p95", "p99"}
        assert stats["cache"]["policy"] == "hybrid"
        assert stats["cache"]["size"] >= 1
        assert set(stats["transport"]) >= {"dnsLookups", "connectionsOpened"}
        service_stats = await service.stats()
        assert "HTTP/2" in str(service_stats.get("httpVersions", {})) or "2" in str(
            service_stats.get("httpVersions", {})
        )


async def test_typing_through_a_suggestion_is_served_from_cache(service: ReferenceProcess) -> None:
    async with ServerProcess(options(service)) as server:
        server.open(URI, "def greet(name):\n    message = ")
        assert await server.inline_text(URI, 1, 14) == '"Hello, " + name.title()'
        server.insert(URI, 1, 14, '"Hel')
        assert await server.inline_text(URI, 1, 18) == 'lo, " + name.title()'
        server.insert(URI, 1, 18, 'lo, " + ')
        assert await server.inline_text(URI, 1, 26) == "name.title()"
        assert await upstream_count(service) == 1
        stats = await server.stats()
        assert stats["served"]["typed"] == 2


async def test_edit_in_another_function_keeps_the_cached_answer(service: ReferenceProcess) -> None:
    text = "def area(width, height):\n    pass\n\n\ndef greet(name):\n    message = "
    async with ServerProcess(options(service)) as server:
        server.open(URI, text)
        first = await server.inline_text(URI, 5, 14)
        assert first == '"Hello, " + name.title()'
        # Edit the body of the other function.
        server.change(
            URI,
            [
                {
                    "range": {
                        "start": {"line": 1, "character": 4},
                        "end": {"line": 1, "character": 8},
                    },
                    "text": "return width * height",
                }
            ],
        )
        assert await server.inline_text(URI, 5, 14) == first
        assert await upstream_count(service) == 1
        assert (await server.stats())["served"]["exact"] == 1


async def test_edit_inside_the_scope_asks_again(service: ReferenceProcess) -> None:
    text = "def greet(name):\n    x = 1\n    message = "
    async with ServerProcess(options(service)) as server:
        server.open(URI, text)
        await server.inline_text(URI, 2, 14)
        assert await upstream_count(service) == 1
        server.change(
            URI,
            [
                {
                    "range": {
                        "start": {"line": 1, "character": 8},
                        "end": {"line": 1, "character": 9},
                    },
                    "text": "2",
                }
            ],
        )
        await server.inline_text(URI, 2, 14)
        assert await upstream_count(service) == 2


async def test_list_completion_offers_the_suggestion(service: ReferenceProcess) -> None:
    async with ServerProcess(options(service)) as server:
        server.open(URI, "def greet(name):\n    message = ")
        result = await server.complete(URI, 1, 14)
        assert len(result.items) == 1
        assert result.items[0].text_edit.new_text == '"Hello, " + name.title()'


async def test_bad_positions_and_unknown_documents_get_empty_answers(
    service: ReferenceProcess,
) -> None:
    async with ServerProcess(options(service)) as server:
        assert await server.inline_text("file:///nowhere.py", 0, 0) is None
        server.open(URI, "x = 1\n")
        # Past the end of the line and of the file: clamped, no crash.
        await server.inline_text(URI, 0, 500)
        await server.inline_text(URI, 99, 3)
        # A change for a document that was never opened is ignored.
        server.insert("file:///closed.py", 0, 0, "y")
        stats = await server.stats()
        assert stats["requests"] == 3


async def test_invalid_settings_are_reported_once_and_valid_ones_apply(
    service: ReferenceProcess,
) -> None:
    opts = options(service, capacity=-5, policy="lru")
    async with ServerProcess(opts) as server:
        server.open(URI, "def greet(name):\n    message = ")
        assert await server.inline_text(URI, 1, 14) == '"Hello, " + name.title()'
        await until_true(
            lambda: any("cache.capacity" in m.message for m in server.messages),
            "the message about the invalid settings",
        )
        stats = await server.stats()  # a later round trip: anything sent before it is here
        problems = [m.message for m in server.messages]
        assert len(problems) == 1
        assert "cache.capacity" in problems[0]
        assert stats["cache"]["policy"] == "lru"
        assert stats["cache"]["capacity"] == 2048


async def test_clear_cache_forgets_answers(service: ReferenceProcess) -> None:
    async with ServerProcess(options(service)) as server:
        server.open(URI, "def greet(name):\n    message = ")
        await server.inline_text(URI, 1, 14)
        cleared = await server.clear_cache()
        assert cleared["cleared"] >= 1
        await server.inline_text(URI, 1, 14)
        assert await upstream_count(service) == 2


async def test_unreachable_endpoint_gives_empty_answers_and_one_message(tmp_path: Path) -> None:
    opts = {"endpoint": "http://127.0.0.1:9/v1", "cache": {"l2": "none"}}
    async with ServerProcess(opts) as server:
        server.open(URI, "def greet(name):\n    message = ")
        assert await server.inline_text(URI, 1, 14) is None
        server.insert(URI, 1, 14, "x")
        assert await server.inline_text(URI, 1, 15) is None

        def upstream_messages() -> list[str]:
            return [m.message for m in server.messages if "completion service" in m.message]

        await until_true(lambda: bool(upstream_messages()), "the message about the service")
        # The next failure passes the same path after the message was shown.
        errors = (await server.stats())["upstreamErrors"]
        assert errors >= 1
        server.insert(URI, 1, 15, "y")
        assert await server.inline_text(URI, 1, 16) is None
        stats = await server.stats()
        assert stats["upstreamErrors"] > errors
        assert len(upstream_messages()) == 1

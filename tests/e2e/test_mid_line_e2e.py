"""``completion.midLine`` in the real server against the real service (what VS Code gets too)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from lsp_server.kit.client import ServerProcess
from tests.support.greet import COLUMN, EXPECTED, LINE, TEXT, URI
from tests.support.reference import ReferenceService

pytestmark = pytest.mark.e2e


def options(upstream: ReferenceService, **completion: Any) -> dict[str, Any]:
    return {
        "endpoint": upstream.url,
        "provider": "openai",
        "model": "m",
        "transport": {"caFile": str(upstream.ca_file)},
        "cache": {"l2": "none"},
        "speculative": {"enabled": False},
        "completion": completion,
    }


@pytest.fixture
async def server(upstream: ReferenceService) -> AsyncIterator[ServerProcess]:
    async with ServerProcess(options(upstream)) as process:
        yield process


async def test_no_suggestion_is_wedged_in_front_of_text_after_the_cursor(
    server: ServerProcess,
) -> None:
    server.open(URI, TEXT + "zzqqx")
    assert await server.inline_text(URI, LINE, COLUMN) is None
    stats = await server.stats()
    assert stats["midLineSuppressed"] == 1


async def test_a_suggestion_before_closing_brackets_is_shown(server: ServerProcess) -> None:
    server.open(URI, TEXT + "]")
    assert await server.inline_text(URI, LINE, COLUMN) == EXPECTED


async def test_a_suggestion_ending_with_the_rest_of_the_line_is_shown_without_it(
    server: ServerProcess,
) -> None:
    server.open(URI, TEXT + "name.title()")
    assert await server.inline_text(URI, LINE, COLUMN) == '"Hello, " + '


async def test_mid_line_always_shows_it_and_never_does_not_ask(
    server: ServerProcess, upstream: ReferenceService
) -> None:
    server.open(URI, TEXT + ")")
    server.configure(options(upstream, midLine="never"))
    assert await server.inline_text(URI, LINE, COLUMN) is None
    assert (await server.stats())["upstreamRequests"] == 0
    server.configure(options(upstream, midLine="always"))
    server.change(URI, [{"text": TEXT + "zzqqx"}])
    assert await server.inline_text(URI, LINE, COLUMN) == EXPECTED

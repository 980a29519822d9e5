"""In-flight reuse through the real server: typing through a running stream, coalescing, cancel."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.kit.client import ServerProcess
from lsp_server.kit.upstream_process import ReferenceProcess
from tests.support.conditions import until
from tests.support.greet import COLUMN, CORPUS, EXPECTED, LINE, TEXT, URI, requests_seen

pytestmark = pytest.mark.e2e


@pytest.fixture
async def slow_service(tmp_path: Path) -> AsyncIterator[ReferenceProcess]:
    """The greet service with a model that takes 3 s to its first token (room for a loaded host)."""
    corpus = tmp_path / "greet.py"
    corpus.write_text(CORPUS)
    async with ReferenceProcess([corpus], ttft_ms=3000.0, token_ms=5.0) as service:
        yield service


def options(service: ReferenceProcess) -> dict[str, Any]:
    return {
        "endpoint": service.url,
        "transport": {"caFile": service.ca_file},
        "cache": {"l2": "none"},
        "speculative": {"enabled": False},
        "throttle": {"minDelayMs": 0, "maxDelayMs": 0},
    }


async def test_typing_what_the_stream_predicts_attaches_to_it(
    slow_service: ReferenceProcess,
) -> None:
    async with ServerProcess(options(slow_service)) as server:
        server.open(URI, TEXT)
        first_id, first = server.request(
            "textDocument/inlineCompletion", server.inline_params(URI, LINE, COLUMN)
        )

        async def started() -> bool:
            return await service_count(slow_service, "streamsStarted") >= 1

        await until(started, "the service to start the stream")
        # The user types the first character of the prediction: the editor
        # cancels the old request and asks again.
        server.cancel(first_id)
        server.insert(URI, LINE, COLUMN, EXPECTED[0])
        second = await server.inline_text(URI, LINE, COLUMN + 1)
        assert second == EXPECTED[1:]
        with pytest.raises(JsonRpcException):
            await first  # answered as cancelled
        assert requests_seen(await slow_service.stats()) == 1
        stats = await server.stats()
        assert stats["served"]["inflight"] == 1 and stats["served"]["upstream"] == 0


async def test_identical_concurrent_requests_share_one_upstream_call(
    slow_service: ReferenceProcess,
) -> None:
    async with ServerProcess(options(slow_service)) as server:
        server.open(URI, TEXT)
        answers = await asyncio.gather(*(server.inline_text(URI, LINE, COLUMN) for _ in range(3)))
        assert answers == [EXPECTED] * 3
        assert requests_seen(await slow_service.stats()) == 1
        served = (await server.stats())["served"]
        assert served["upstream"] == 1 and served["inflight"] == 2


@pytest.fixture
async def silent_service(tmp_path: Path) -> AsyncIterator[ReferenceProcess]:
    """The greet service with a model that gives no token within any test's time."""
    corpus = tmp_path / "greet.py"
    corpus.write_text(CORPUS)
    async with ReferenceProcess([corpus], ttft_ms=600_000.0) as service:
        yield service


async def service_count(service: ReferenceProcess, counter: str) -> int:
    return int((await service.stats()).get(counter, 0))


async def test_a_cancelled_request_nobody_attaches_to_is_cancelled_upstream(
    silent_service: ReferenceProcess,
) -> None:
    # The stream cannot finish on its own, so only the cancellation can end
    # it; each step waits for the service to have seen the previous one.
    async with ServerProcess(options(silent_service)) as server:
        server.open(URI, TEXT)
        msg_id, pending = server.request(
            "textDocument/inlineCompletion", server.inline_params(URI, LINE, COLUMN)
        )

        async def started() -> bool:
            return await service_count(silent_service, "streamsStarted") >= 1

        await until(started, "the service to start the stream")
        server.cancel(msg_id)
        with pytest.raises(JsonRpcException):
            await pending

        async def reset() -> bool:
            return await service_count(silent_service, "streamsCancelled") >= 1

        # after the grace period the stream is reset at the service
        await until(reset, "the stream to be reset at the service")
        assert await service_count(silent_service, "streamsCancelled") == 1
        assert (await server.stats())["upstreamCancelled"] == 1

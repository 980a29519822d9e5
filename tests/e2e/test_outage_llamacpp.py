"""A llama.cpp server that dies mid-stream or stops answering, then comes back.

The real ``scopecache serve`` process against llama.cpp's own HTTP server
(the xllamacpp wheel, the tiny random-weight model). What must hold through
an outage: no document stuck behind a stream that will never end, no error
shown as a suggestion, and suggestions again within seconds of the server's
return.

"Stops answering" is the real server stopped with SIGSTOP: the kernel still
accepts its connections and buffers the requests, nothing answers, and on
SIGCONT it works through what was queued, as a swapped-out or frozen server
does. The read timeout is a setting, so the test's stall is shorter than a
real one.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.client import ServerProcess
from tests.support import conditions
from tests.support.llamacpp import LlamaCppServer, missing_reason

pytestmark = pytest.mark.e2e

URI = "file:///work/project/shapes.py"
TEXT = "import math\n\n\ndef area(radius):\n    return \n"
LINE, COLUMN = 4, 11
#: how soon after the server is back a suggestion must come again ("within seconds")
BACK_WITHIN = 10.0
#: consecutive failures that open the circuit breaker (``transport.options``)
FAILURES_TO_OPEN = 5


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def llama(tmp_path: Path) -> Iterator[LlamaCppServer]:
    reason = missing_reason()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    server = LlamaCppServer(tmp_path, port=free_port()).start()
    try:
        yield server
    finally:
        if server.process is not None and server.process.poll() is None:
            os.kill(server.process.pid, signal.SIGCONT)
        server.stop()


def settings(endpoint: str, **extra: Any) -> dict[str, Any]:
    return {
        "endpoint": endpoint,
        "cache": {"l2": "none"},
        "speculative": {"enabled": False},
        "throttle": {"minDelayMs": 0, "maxDelayMs": 0},
        "completion": {"maxTokens": 256, "confidence": False},
        **extra,
    }


async def on_thread(check: Callable[[], bool]) -> bool:
    return await asyncio.to_thread(check)


class Typist:
    """Types on the document's line one character at a time and asks at each key."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.column = COLUMN
        self.shown: list[str | None] = []

    async def key(self) -> str | None:
        self.server.insert(URI, LINE, self.column, "x")
        self.column += 1
        text = await self.server.inline_text(URI, LINE, self.column)
        self.shown.append(text)
        return text


def no_error_text(shown: list[str | None]) -> bool:
    words = ("error", "failed", "unavailable", "refused", "timeout", "circuit")
    return not any(text and any(word in text.lower() for word in words) for text in shown)


async def test_a_server_killed_mid_stream_and_restarted_is_used_again_within_seconds(
    llama: LlamaCppServer, tmp_path: Path
) -> None:
    async with ServerProcess(settings(llama.url)) as server:
        server.open(URI, TEXT)
        assert await server.inline_text(URI, LINE, COLUMN)  # identified, connection warm
        typist = Typist(server)
        server.insert(URI, LINE, typist.column, "r")
        typist.column += 1
        _, pending = server.request(
            "textDocument/inlineCompletion", server.inline_params(URI, LINE, typist.column)
        )
        await conditions.until(lambda: on_thread(llama.busy), "the server to generate")
        llama.stop()  # killed in the middle of the stream
        result = await pending
        assert not getattr(result, "items", None)  # nothing shown, not an error

        # The user types on while it is down, long enough for the breaker to
        # open and three of its probes to fail (as through a 30 s outage):
        # every key answered, with nothing.
        async def probes_failed() -> bool:
            assert await typist.key() is None
            errors = (await server.stats())["transport"]["errorsByKind"]
            return errors.get("connect", 0) >= FAILURES_TO_OPEN + 3

        await conditions.until(probes_failed, "three failed probes of the breaker")
        restarted = LlamaCppServer(tmp_path, port=int(llama.url.rsplit(":", 1)[1])).start()
        try:

            async def suggesting() -> bool:
                return bool(await typist.key())

            await conditions.until(
                suggesting, "a suggestion after the restart", deadline=BACK_WITHIN
            )
            stats = await server.stats()
        finally:
            restarted.stop()
    assert no_error_text(typist.shown)
    assert stats["upstreamErrors"] >= 1


async def test_a_server_that_stops_answering_is_used_again_within_seconds_of_its_return(
    llama: LlamaCppServer,
) -> None:
    assert llama.process is not None
    read_timeout = 2.0
    options = settings(llama.url, transport={"readTimeout": read_timeout})
    async with ServerProcess(options) as server:
        server.open(URI, TEXT)
        assert await server.inline_text(URI, LINE, COLUMN)
        typist = Typist(server)
        os.kill(llama.process.pid, signal.SIGSTOP)  # stops answering, connections still accepted
        try:
            # The user types on through several read timeouts: every key is
            # answered (nothing), none waits behind a stream that never ends.
            async def timed_out_thrice() -> bool:
                assert await typist.key() is None
                return (await server.stats())["upstreamErrors"] >= 3

            await conditions.until(timed_out_thrice, "three read timeouts")
        finally:
            os.kill(llama.process.pid, signal.SIGCONT)

        async def suggesting() -> bool:
            return bool(await typist.key())

        await conditions.until(suggesting, "a suggestion after the return", deadline=BACK_WITHIN)
    assert no_error_text(typist.shown)

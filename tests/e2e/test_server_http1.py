"""The real server process against an HTTP/1.1-only service that closes after each stream.

The reference service runs ``--http1-only --close-after-stream
--keep-alive-timeout 5`` on cleartext 127.0.0.1, as llama.cpp's
``llama-server`` behaves. The server gets nothing but the endpoint (no
transport settings). "Waits for no connect" is asserted with counters: the
server's ``connectWaits`` stays put, and the service saw the request on a
connection whose id is no higher than the newest one before the request was
sent (so it was already open).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.kit.client import ServerProcess
from tests.support.greet import COLUMN, CORPUS, EXPECTED, LINE, TEXT, URI
from tests.support.reference import ReferenceService

pytestmark = pytest.mark.e2e

#: a second miss in the same document: the start of the next line
NEXT_TEXT = TEXT + EXPECTED + "\n    return "


@pytest.fixture(scope="module")
def llama_like(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceService]:
    corpus = tmp_path_factory.mktemp("corpus") / "greet.py"
    corpus.write_text(CORPUS)
    args = ["--http1-only", "--close-after-stream", "--keep-alive-timeout", "5"]
    with ReferenceService(tls=False, corpus=[corpus], extra_args=args) as service:
        yield service


@pytest.fixture
def svc(llama_like: ReferenceService) -> ReferenceService:
    llama_like.reset()
    return llama_like


def only_the_endpoint(endpoint: str, tmp_path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """Init options with nothing but the endpoint; the L2 goes to a temporary cache dir."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return {"endpoint": endpoint}, env


def no_transport_settings(
    endpoint: str, tmp_path: Path
) -> tuple[dict[str, Any], dict[str, str]]:
    """The endpoint and no transport settings; no speculative prefetch, so every
    upstream request a test sees is the one it asked for."""
    options, env = only_the_endpoint(endpoint, tmp_path)
    options["speculative"] = {"enabled": False}
    return options, env


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.02)


async def transport(server: ServerProcess) -> dict[str, Any]:
    stats = await server.stats()
    result: dict[str, Any] = stats["transport"]
    return result


async def assert_next_miss_waits_for_no_connect(
    server: ServerProcess, svc: ReferenceService
) -> None:
    async def spare_ready() -> bool:
        return int((await transport(server))["connectionsReady"]) >= 1

    await eventually(spare_ready)
    waits = (await transport(server))["connectWaits"]
    before = svc.stats()
    newest, seen = before["lastConnection"], before["requests"]["total"]
    server.open("file:///work/project/next.py", NEXT_TEXT)
    assert await server.inline_text("file:///work/project/next.py", 2, 11)
    assert (await transport(server))["connectWaits"] == waits
    after = svc.stats()
    assert after["requests"]["total"] == seen + 1  # a real miss, nothing else
    assert after["recent"][seen]["connection"] <= newest


@pytest.mark.parametrize("path", ["", "/v1"])
async def test_only_an_endpoint_gives_completions_and_cache_hits_over_http1(
    svc: ReferenceService, tmp_path: Path, path: str
) -> None:
    options, env = only_the_endpoint(svc.base + path, tmp_path)
    async with ServerProcess(options, env=env) as server:
        server.open(URI, TEXT)
        assert await server.inline_text(URI, LINE, COLUMN) == EXPECTED
        assert await server.inline_text(URI, LINE, COLUMN) == EXPECTED
        stats = await server.stats()
        assert server.messages == []
    assert stats["served"]["upstream"] == 1 and stats["served"]["exact"] == 1
    assert stats["upstreamErrors"] == 0
    assert stats["transport"]["protocol"] == "http/1.1"
    service = svc.stats()
    # (speculative prefetch may add requests of its own: all of them HTTP/1.1)
    assert set(service["httpVersions"]) == {"1.1"}
    # the service closed the connection after the answered stream; a speculative
    # stream still running when the editor went away ends without that close
    assert 1 <= service["connectionsClosedAfterStream"] <= service["requests"]["total"]
    assert service["h2PrefacesRejected"] == 0


async def test_the_miss_after_a_closed_after_stream_response_waits_for_no_connect(
    svc: ReferenceService, tmp_path: Path
) -> None:
    options, env = no_transport_settings(svc.url, tmp_path)
    async with ServerProcess(options, env=env) as server:
        server.open(URI, TEXT)
        assert await server.inline_text(URI, LINE, COLUMN) == EXPECTED

        async def noticed_the_close() -> bool:
            return int((await transport(server))["connectionsClosedByServer"]) >= 1

        await eventually(noticed_the_close)
        await assert_next_miss_waits_for_no_connect(server, svc)
        assert (await server.stats())["upstreamErrors"] == 0


async def test_cancelling_a_stream_closes_its_connection_and_the_service_stops(
    svc: ReferenceService, tmp_path: Path
) -> None:
    options, env = no_transport_settings(svc.url, tmp_path)
    async with ServerProcess(options, env=env) as server:
        server.open(URI, TEXT)
        svc.set_fault("never-ending", 1, interval=0.02)
        msg_id, pending = server.request(
            "textDocument/inlineCompletion", server.inline_params(URI, LINE, COLUMN)
        )

        async def streaming() -> bool:
            return int(svc.stats()["streamsStarted"]) >= 1

        await eventually(streaming)
        server.cancel(msg_id)
        with pytest.raises(JsonRpcException):
            await pending

        async def cancelled_at_the_service() -> bool:
            return int(svc.stats()["streamsCancelled"]) == 1

        await eventually(cancelled_at_the_service)  # after the in-flight grace period
        assert (await transport(server))["connectionsClosedByCancel"] == 1
        await assert_next_miss_waits_for_no_connect(server, svc)


async def test_http2_required_against_an_http1_only_service_says_how_to_fix_it_once(
    svc: ReferenceService, tmp_path: Path
) -> None:
    options, env = only_the_endpoint(svc.url, tmp_path)
    options["transport"] = {"http2": True}
    async with ServerProcess(options, env=env) as server:
        server.open(URI, TEXT)
        for _ in range(2):
            assert not await server.inline_text(URI, LINE, COLUMN)
        fixes = [m.message for m in server.messages if "transport.http2" in m.message]
        log = server.log_file.read_text()
    assert len(fixes) == 1, server.messages
    assert "speaks HTTP/1.1 only" in fixes[0] and "set transport.http2 to auto" in fixes[0]
    assert "cannot reach" not in " ".join(m.message for m in server.messages)
    assert "cannot reach" not in log
    assert "127.0.0.1 speaks HTTP/1.1 only" in log  # the host is named
    assert svc.stats()["h2PrefacesRejected"] >= 1

"""Short-lived bearer tokens end to end: the real server process, the real reference service.

The reference service runs in token mode (it issues tokens at
``/oauth/token`` and completions need a valid one). The server fetches its
tokens through ``TokenRelay``, a small token endpoint in this process that
forwards to the service's, delays each answer a little and records when each
token request arrived and was answered, on the same monotonic clock the test
uses to time its completion requests. A completion that waited for a token
fetch contains that fetch's whole time span; a background refresh that merely
overlaps a completion does not. The relay can also stop answering (the token
endpoint is down) and come back.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.client import ServerProcess
from lsp_server.kit.replay import Replayer
from lsp_server.kit.synth.session import synthesize
from tests.support.conditions import DEFAULT_DEADLINE, until, until_true
from tests.support.reference import ReferenceService

pytestmark = pytest.mark.e2e

CORPUS = """\
def greet(name):
    message = "Hello, " + name.title()
    return message.upper()


def area(width, height):
    result = width * height
    return round(result, 2)
"""
URI = "file:///work/project/app.py"
CLIENT_ID = "scopecache-editor"
SECRET = "cs-4e1f9a7b2d6c8e3f"
SECRET_ENV = "SCOPECACHE_TEST_CLIENT_SECRET"
#: seconds; refreshed at about half of it, so a loaded machine has two seconds of slack
LIFETIME = 4.0
#: how long the relay holds each token answer (a waiting completion would take this long)
RELAY_DELAY = 0.2

Span = tuple[float, float]


class TokenRelay:
    """A token endpoint on 127.0.0.1 that relays to the reference service's and keeps records."""

    def __init__(self, service: ReferenceService, delay: float = RELAY_DELAY) -> None:
        self.service = service
        self.delay = delay
        self.down = False
        self.spans: list[Span] = []
        self.refused = 0
        self.tokens: list[str] = []
        self.port = 0
        self._server: asyncio.Server | None = None
        self._client = service.async_client(http2=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/oauth/token"

    async def __aenter__(self) -> TokenRelay:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        await self._client.aclose()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            headers = {}
            for line in head[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            arrived = time.monotonic()
            if self.down:
                self.refused += 1
                return  # stop answering: close without a response
            await asyncio.sleep(self.delay)
            forwarded = {k: v for k, v in headers.items() if k in ("content-type", "authorization")}
            answer = await self._client.post(
                self.service.token_url, content=body, headers=forwarded
            )
            if answer.status_code == 200:
                self.tokens.append(answer.json()["access_token"])
            writer.write(
                f"HTTP/1.1 {answer.status_code} Relayed\r\ncontent-type: application/json\r\n"
                f"content-length: {len(answer.content)}\r\nconnection: close\r\n\r\n".encode()
                + answer.content
            )
            await writer.drain()
            self.spans.append((arrived, time.monotonic()))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ReferenceService]:
    corpus = tmp_path / "corpus.py"
    corpus.write_text(CORPUS)
    with ReferenceService(tls=True, corpus=[corpus]) as svc:
        yield svc


@pytest.fixture
async def relay(service: ReferenceService) -> AsyncIterator[TokenRelay]:
    async with TokenRelay(service) as relay:
        yield relay


def settings(service: ReferenceService, token_url: str) -> dict[str, Any]:
    return {
        "endpoint": service.url,
        "model": "m",
        "transport": {"caFile": str(service.ca_file)},
        "cache": {"l2": "none"},
        # Only the requests a test makes go upstream, so the counts are exact.
        "speculative": {"enabled": False},
        "auth": {
            "kind": "oauth2-client-credentials",
            "tokenUrl": token_url,
            "clientId": CLIENT_ID,
            "clientSecretEnv": SECRET_ENV,
            "scope": "completions",
            # A token lives LIFETIME seconds here, not minutes: refresh early enough
            # that the background fetch (relay delay included) ends before expiry even
            # on a loaded machine (both cores busy with other work).
            "refreshAt": 0.5,
        },
    }


def server_for(
    service: ReferenceService, relay: TokenRelay, log_file: Path, log_level: str = "DEBUG"
) -> ServerProcess:
    env = {**os.environ, SECRET_ENV: SECRET}
    return ServerProcess(
        settings(service, relay.url), env=env, log_file=log_file, log_level=log_level
    )


async def timed_completion(server: ServerProcess) -> tuple[str | None, Span]:
    await server.clear_cache()  # every completion goes upstream
    started = time.monotonic()
    text = await server.inline_text(URI, 1, 14)
    return text, (started, time.monotonic())


def waited_for_token(completions: list[Span], fetches: list[Span]) -> int:
    """Completions whose time span contains a whole token fetch (it was on their path)."""
    return sum(1 for a, b in completions for c, d in fetches if a <= c and d <= b)


async def test_tokens_are_prefetched_and_refreshed_off_the_request_path(
    service: ReferenceService, relay: TokenRelay, tmp_path: Path
) -> None:
    service.enable_tokens(CLIENT_ID, SECRET, lifetime=LIFETIME)
    log_file = tmp_path / "server.log"
    async with server_for(service, relay, log_file) as server:
        server.open(URI, "def greet(name):\n    message = \n")
        # The token is fetched at start, before any completion asks for it.
        await until_true(lambda: len(relay.spans) == 1, "the token fetched at start")
        assert service.stats()["tokenRequests"] == 1
        texts: list[str | None] = []
        spans: list[Span] = []
        # A session of completions that lasts until the token was refreshed
        # four times in the background (past two lifetimes), however slowly.
        give_up = time.monotonic() + DEFAULT_DEADLINE
        while len(relay.spans) < 5:
            assert time.monotonic() < give_up, f"still waiting for refreshes: {relay.spans}"
            text, span = await timed_completion(server)
            texts.append(text)
            spans.append(span)
            await asyncio.sleep(0.02)  # the pace of the session, not a wait
        stats = await server.stats()

    ref = service.stats()
    assert texts and all(t == '"Hello, " + name.title()' for t in texts)
    assert ref["authFailures"] == 0  # no completion was ever refused
    assert ref["requests"]["total"] == stats["transport"]["requests"] >= len(texts)
    assert stats["transport"]["retries"] == 0  # ... nor retried
    assert stats["upstreamErrors"] == 0 and stats["transport"]["errorsByKind"] == {}
    # Several refreshes, all in the background; the relay and the service agree.
    assert len(relay.spans) >= 4
    assert ref["tokenRequests"] == len(relay.spans) == len(relay.tokens)
    assert waited_for_token(spans, relay.spans) == 0
    log = log_file.read_text()
    assert "waits for an access token" not in log
    # Neither the client secret nor any token reaches the log or the stats.
    assert "access token obtained" in log  # the log is there and verbose
    stats_text = json.dumps(stats)
    for secret in [SECRET, *relay.tokens]:
        assert secret not in log
        assert secret not in stats_text


async def test_a_revoked_token_costs_one_refresh_and_one_retry(
    service: ReferenceService, relay: TokenRelay, tmp_path: Path
) -> None:
    service.enable_tokens(CLIENT_ID, SECRET, lifetime=60)
    async with server_for(service, relay, tmp_path / "server.log") as server:
        server.open(URI, "def greet(name):\n    message = \n")
        await until_true(lambda: len(relay.spans) == 1, "the token fetched at start")
        text, _ = await timed_completion(server)
        assert text is not None
        service.reset_stats()
        assert service.revoke_tokens() == 1

        text, span = await timed_completion(server)
        assert text == '"Hello, " + name.title()'
        ref = service.stats()
        assert ref["authFailures"] == 1  # the one refused request ...
        assert ref["requests"]["total"] == 2  # ... and its one retry
        assert ref["tokenRequests"] == 1 and len(relay.spans) == 2
        assert waited_for_token([span], relay.spans[1:]) == 1  # the forced refresh

        text, _ = await timed_completion(server)  # back to normal: nothing extra
        assert text is not None
        assert service.stats()["tokenRequests"] == 1
        assert service.stats()["authFailures"] == 1


async def test_token_endpoint_outage_pauses_completions_and_recovers(
    service: ReferenceService, relay: TokenRelay, tmp_path: Path
) -> None:
    service.enable_tokens(CLIENT_ID, SECRET, lifetime=LIFETIME)
    async with server_for(service, relay, tmp_path / "server.log") as server:
        server.open(URI, "def greet(name):\n    message = \n")
        await until_true(lambda: len(relay.spans) == 1, "the token fetched at start")
        assert (await timed_completion(server))[0] is not None

        relay.down = True
        answers: list[str | None] = []

        async def paused_a_while() -> bool:
            # completions until the token has expired and 20 of them were paused
            answers.append((await timed_completion(server))[0])
            return sum(1 for a in answers if a is None) >= 20

        await until(paused_a_while, "completions to pause once the token expired")
        # Once the token expired, completions are empty, not errors, and the
        # token endpoint is retried with backoff, not once per keystroke.
        assert answers[-1] is None
        paused = sum(1 for a in answers if a is None)
        assert 1 <= relay.refused < paused / 2
        auth_messages = [m for m in server.messages if "access token" in m.message]
        assert len(auth_messages) == 1 and "paused" in auth_messages[0].message

        relay.down = False
        recovered: list[str | None] = []

        async def answered() -> bool:
            # the next retry of the token endpoint (backoff is capped at 10 s) succeeds
            recovered.append((await timed_completion(server))[0])
            return recovered[-1] is not None

        await until(answered, "completions to resume")
        assert recovered[-1] == '"Hello, " + name.title()'
        assert any("resumed" in m.message for m in server.messages)
        assert sum(1 for m in server.messages if "access token" in m.message) == 2


async def test_replayed_session_sees_no_401_and_no_token_fetch_on_the_request_path(
    tmp_path: Path,
) -> None:
    source = sorted((Path(__file__).parents[1] / "data" / "corpus").glob("*.py"))[0]
    uri = f"file:///work/project/{source.name}"
    trace = synthesize({uri: source.read_text()}, seed=3)
    corpus = tmp_path / source.name
    corpus.write_text(source.read_text())
    log_file = tmp_path / "server.log"
    with ReferenceService(tls=True, corpus=[corpus]) as service:
        service.enable_tokens(CLIENT_ID, SECRET, lifetime=LIFETIME)
        async with TokenRelay(service) as relay:
            async with server_for(service, relay, log_file, "INFO") as server:
                await until_true(lambda: len(relay.spans) == 1, "the token fetched at start")
                # Real-time replay, sped up so the session spans four token lifetimes.
                speed = trace.events[-1].t / (4 * LIFETIME)
                result = await Replayer(server, trace, speed=speed).run()
                stats = await server.stats()
            ref = service.stats()

    assert stats["upstreamRequests"] > 20
    assert ref["authFailures"] == 0  # zero 401s, so none could reach the editor
    assert not [o for _e, o in result.outcomes if o.error]
    assert stats["upstreamErrors"] == 0 and stats["problems"] == {}
    # Token fetches: at start and in the background only, counted at both servers.
    assert ref["tokenRequests"] == len(relay.spans) >= 4
    log = log_file.read_text()
    assert "waits for an access token" not in log
    assert "forced refresh" not in log
    for secret in [SECRET, *relay.tokens]:
        assert secret not in log

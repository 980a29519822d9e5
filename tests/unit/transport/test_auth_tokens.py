"""RefreshingTokenAuth: prefetch, refresh-ahead, single flight, rejection, pause and backoff."""

from __future__ import annotations

import asyncio
import logging

import pytest

from transport.auth.command import CommandTokenSource
from transport.auth.kinds import auth_for
from transport.auth.oauth import ClientCredentialsSource
from transport.auth.source import IssuedToken, TokenSource
from transport.auth.tokens import RefreshingTokenAuth
from transport.errors import AuthError, ConfigurationError
from transport.options import EndpointOptions
from transport.resilience import Backoff, SecretRedactor


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class ScriptedSource(TokenSource):
    """Hands out tok-1, tok-2, ... with a fixed lifetime; can fail or block on demand."""

    description = "scripted source"

    def __init__(self, lifetime: float | None = 100.0) -> None:
        self.lifetime = lifetime
        self.calls = 0
        self.failing = False
        self.gate: asyncio.Event | None = None

    async def fetch(self) -> IssuedToken:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.failing:
            raise AuthError("token endpoint answered HTTP 503")
        return IssuedToken(f"tok-{self.calls}", self.lifetime)

    def secrets(self) -> list[str]:
        return ["client-secret-value"]


def make_auth(source: ScriptedSource, clock: FakeClock) -> RefreshingTokenAuth:
    return RefreshingTokenAuth(
        source,
        refresh_at=0.8,
        jitter=0.1,
        clock=clock,
        rng=lambda: 0.5,
        retry=Backoff(1.0, 8.0, rng=lambda: 1.0),
        background=False,
    )


async def test_start_prefetches_and_header_answers_from_memory() -> None:
    source, clock = ScriptedSource(), FakeClock()
    auth = make_auth(source, clock)
    await auth.start()
    assert source.calls == 1
    for _ in range(5):
        assert await auth.header() == {"Authorization": "Bearer tok-1"}
    assert source.calls == 1


async def test_refresh_is_due_at_the_configured_fraction_with_jitter() -> None:
    source, clock = ScriptedSource(lifetime=100.0), FakeClock()
    auth = make_auth(source, clock)
    await auth.start()
    # refresh_at 0.8 minus jitter 0.1 * 0.5: due 75 s after the fetch
    assert await auth.tick() == pytest.approx(75.0)
    clock.now += 74.0
    await auth.tick()
    assert source.calls == 1
    clock.now += 1.0
    await auth.tick()
    assert source.calls == 2
    assert await auth.header() == {"Authorization": "Bearer tok-2"}


async def test_requests_during_a_refresh_use_the_still_valid_token() -> None:
    source, clock = ScriptedSource(), FakeClock()
    auth = make_auth(source, clock)
    await auth.start()
    clock.now += 80.0
    source.gate = asyncio.Event()
    refresh = asyncio.ensure_future(auth.tick())
    for _ in range(10):
        await asyncio.sleep(0)
    assert source.calls == 2  # the refresh is under way ...
    assert await auth.header() == {"Authorization": "Bearer tok-1"}  # ... and nobody waits
    source.gate.set()
    await refresh
    assert await auth.header() == {"Authorization": "Bearer tok-2"}


async def test_one_fetch_at_a_time_for_concurrent_callers() -> None:
    source, clock = ScriptedSource(), FakeClock()
    auth = make_auth(source, clock)  # never started: the first callers must fetch
    source.gate = asyncio.Event()
    waiters = [asyncio.ensure_future(auth.header()) for _ in range(10)]
    await asyncio.sleep(0)
    source.gate.set()
    headers = await asyncio.gather(*waiters)
    assert source.calls == 1
    assert {h["Authorization"] for h in headers} == {"Bearer tok-1"}


async def test_rejected_token_forces_exactly_one_refresh() -> None:
    source, clock = ScriptedSource(), FakeClock()
    auth = make_auth(source, clock)
    await auth.start()
    rejected = await auth.header()
    # Two requests carrying the same token are refused at the same time.
    results = await asyncio.gather(auth.on_rejected(rejected), auth.on_rejected(rejected))
    assert list(results) == [True, True]
    assert source.calls == 2
    assert await auth.header() == {"Authorization": "Bearer tok-2"}
    # A late rejection of the old token retries with the new one, no fetch.
    assert await auth.on_rejected(rejected)
    assert source.calls == 2


async def test_a_fresh_token_rejected_again_is_a_failure_not_a_loop() -> None:
    source, clock = ScriptedSource(), FakeClock()
    auth = make_auth(source, clock)
    await auth.start()
    assert await auth.on_rejected(await auth.header())
    assert not await auth.on_rejected(await auth.header())  # tok-2 refused too
    assert source.calls == 2
    with pytest.raises(AuthError):
        await auth.header()  # paused, not refetching per keystroke
    assert source.calls == 2


async def test_endpoint_down_pauses_with_backoff_and_recovers() -> None:
    source, clock = ScriptedSource(), FakeClock()
    source.failing = True
    auth = make_auth(source, clock)
    await auth.start()
    assert source.calls == 1
    for _ in range(20):  # keystrokes during the outage: immediate errors, no fetches
        with pytest.raises(AuthError, match="next attempt in"):
            await auth.header()
    assert source.calls == 1
    assert await auth.tick() == pytest.approx(1.0)  # backoff 1 s, then 2 s, ...
    clock.now += 1.0
    assert await auth.tick() == pytest.approx(2.0)
    assert source.calls == 2
    source.failing = False
    clock.now += 2.0
    await auth.tick()
    assert source.calls == 3
    assert await auth.header() == {"Authorization": "Bearer tok-3"}


async def test_refresh_failure_keeps_serving_the_valid_token() -> None:
    source, clock = ScriptedSource(lifetime=100.0), FakeClock()
    auth = make_auth(source, clock)
    await auth.start()
    source.failing = True
    clock.now += 80.0
    await auth.tick()
    assert await auth.header() == {"Authorization": "Bearer tok-1"}
    clock.now += 19.0  # within the expiry margin
    with pytest.raises(AuthError):
        await auth.header()


async def test_token_without_lifetime_is_used_until_rejected() -> None:
    source, clock = ScriptedSource(lifetime=None), FakeClock()
    auth = make_auth(source, clock)
    await auth.start()
    clock.now += 1800.0
    assert await auth.header() == {"Authorization": "Bearer tok-1"}


async def test_background_loop_refreshes_ahead_of_expiry() -> None:
    source = ScriptedSource(lifetime=0.5)
    auth = RefreshingTokenAuth(source, refresh_at=0.5, jitter=0.0)
    await auth.start()
    try:
        for _ in range(200):
            if source.calls >= 3:
                break
            await asyncio.sleep(0.02)
        assert source.calls >= 3
        assert (await auth.header())["Authorization"].startswith("Bearer tok-")
    finally:
        await auth.aclose()


async def test_secrets_cover_the_client_secret_and_tokens_and_are_redacted() -> None:
    source, clock = ScriptedSource(), FakeClock()
    auth = make_auth(source, clock)
    await auth.start()
    assert set(auth.secrets()) == {"client-secret-value", "tok-1"}
    record = logging.LogRecord("t", logging.INFO, __file__, 1, "sent %s with %s", None, None)
    record.args = ("tok-1", "client-secret-value")
    SecretRedactor(auth.secrets).filter(record)
    assert record.getMessage() == "sent *** with ***"
    assert "tok-1" not in repr(auth)


def test_auth_for_builds_the_token_kinds_and_checks_their_settings() -> None:
    base = EndpointOptions(endpoint="https://svc.test/v1")
    oauth = base.replace(
        auth_kind="oauth2-client-credentials",
        token_url="https://svc.test/oauth/token",
        client_id="scopecache",
        client_secret_env="SVC_SECRET",
    )
    provider = auth_for(oauth, environ={"SVC_SECRET": "s3cret-value"})
    assert isinstance(provider, RefreshingTokenAuth)
    assert isinstance(provider.source, ClientCredentialsSource)
    assert provider.secrets() == ["s3cret-value"]
    command = auth_for(base.replace(auth_kind="command", command="print-token --json"))
    assert isinstance(command, RefreshingTokenAuth)
    assert isinstance(command.source, CommandTokenSource)
    assert command.source.argv == ["print-token", "--json"]
    with pytest.raises(ConfigurationError):
        auth_for(oauth.replace(token_url=None))
    with pytest.raises(ConfigurationError):
        oauth.replace(client_secret_env=None).validate()
    with pytest.raises(ConfigurationError):
        base.replace(auth_kind="command").validate()

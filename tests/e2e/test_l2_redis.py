"""The Redis L2 against a real redis-server: sharing, isolation, stream delivery, faults."""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cache.entry import CachedCompletion
from cache.keys import LineAnchor, ScopeKey
from cache.l2 import L2Change
from cache.l2.base import key_to_json
from cache.l2.redis import RedisStore
from tests.support.text import lines_text

try:
    from tests.support.conditions import until, until_true
    from tests.support.redis_server import RedisServer, redis_available
except ModuleNotFoundError:  # pytest run without the repository root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.support.conditions import until, until_true
    from tests.support.redis_server import RedisServer, redis_available

import redis.asyncio as aioredis

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not redis_available(), reason="redis-server is not installed"),
]

NAMESPACE = "https://models.example/v1|coder-7b|team-a"


def entry(i: int, text: str = "return x") -> CachedCompletion:
    key = ScopeKey.build(
        language="python",
        scope_depth=2,
        node_type="call",
        parent_type="block",
        scope_text=f"SECRET_SOURCE_{i}",
        suffix_text="",
    )
    anchor = LineAnchor.build(language="python", context=lines_text([f"l{i}"]), suffix_text="")
    return CachedCompletion(key=key, anchor=anchor, line_prefix="    ", text=f"{text} + {i}")


async def nothing_pending(raw: Any, stream: str, group: str) -> bool:
    return int((await raw.xpending(stream, group))["pending"]) == 0


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture
async def raw(redis_server: RedisServer) -> AsyncIterator[Any]:
    client = aioredis.Redis.from_url(redis_server.url)
    yield client
    await client.aclose()


@pytest.fixture
async def session(redis_server: RedisServer) -> AsyncIterator[Callable[..., Any]]:
    """Build and start RedisStores ("editor sessions"); all are closed afterwards."""
    stores: list[RedisStore] = []

    async def make(namespace: str = NAMESPACE, **kwargs: Any) -> RedisStore:
        kwargs.setdefault("secret", b"team-secret")
        kwargs.setdefault("block_ms", 100)
        kwargs.setdefault("retry_initial", 0.05)
        kwargs.setdefault("retry_max", 0.2)
        # A loaded CI host can take longer than the product's 0.25 s to connect;
        # these tests are about sharing, not about how soon a slow Redis is dropped.
        kwargs.setdefault("socket_timeout", 2.0)
        store = RedisStore(redis_server.url, namespace, **kwargs)
        stores.append(store)
        await store.start()
        return store

    yield make
    for store in stores:
        await store.aclose()


def recorder(store: RedisStore) -> list[L2Change]:
    seen: list[L2Change] = []
    store.subscribe(seen.append)
    return seen


async def test_two_sessions_see_each_others_entries_through_the_stream(
    session: Callable[..., Any],
) -> None:
    one, two = await session(), await session()
    seen_by_two, seen_by_one = recorder(two), recorder(one)
    await one.put(entry(1))
    await until_true(lambda: len(seen_by_two) == 1, "the put to reach the second session")
    assert seen_by_two == [L2Change("put", entry(1).key, entry(1))]
    assert await two.get(entry(1).key) == entry(1)

    await two.invalidate(entry(1).key)
    await until_true(lambda: len(seen_by_one) == 1, "the invalidation to reach the first session")
    assert seen_by_one == [L2Change("invalidate", entry(1).key)]
    assert await one.get(entry(1).key) is None
    assert one.group != two.group


async def test_session_of_another_namespace_never_sees_the_entry(
    session: Callable[..., Any],
) -> None:
    one, same, other = await session(), await session(), await session("http://x/v1|other|")
    writer_of_other = await session("http://x/v1|other|")
    seen_by_same, seen_by_other = recorder(same), recorder(other)
    await one.put(entry(1))
    await until_true(lambda: len(seen_by_same) == 1, "the put to reach the same namespace")
    # Once the other namespace's reader has delivered a later entry of its own
    # namespace, it has had every chance to deliver the first one too.
    await writer_of_other.put(entry(2))
    await until_true(lambda: len(seen_by_other) >= 1, "the other namespace's own put")
    assert [c.entry for c in seen_by_other] == [entry(2)]
    assert await other.get(entry(1).key) is None
    assert await other.hottest(10) == [entry(2)]  # its own namespace's only


async def test_redelivered_event_is_applied_once(session: Callable[..., Any], raw: Any) -> None:
    one, two = await session(), await session()
    seen = recorder(two)
    value = entry(5).to_json()
    fields = {
        "op": "put",
        "id": "op-5",
        "src": "a-session-elsewhere",
        "key": key_to_json(entry(5).key),
        "v": value,
    }
    await raw.xadd(one.stream_key, fields)
    await raw.xadd(one.stream_key, fields)  # the same op_id delivered again
    await raw.xadd(one.stream_key, {**fields, "id": "op-6"})  # a new op for the same entry
    await raw.xadd(one.stream_key, {**fields, "id": "op-7"})
    # A later op of another entry: read in order, so once it is delivered every
    # op before it has had its chance.
    later = {**fields, "id": "op-8", "key": key_to_json(entry(6).key), "v": entry(6).to_json()}
    await raw.xadd(one.stream_key, later)
    await until_true(lambda: any(c.entry == entry(6) for c in seen), "the later op")
    assert [c.entry for c in seen] == [entry(5)] * 3 + [entry(6)]  # op-5 once, op-6, op-7, op-8


async def test_pending_event_of_a_dead_consumer_is_claimed_and_applied(
    session: Callable[..., Any], raw: Any
) -> None:
    writer = await session()
    group = "host-a:workspace"
    await raw.xgroup_create(writer.stream_key, group, id="$", mkstream=True)
    await writer.put(entry(3))
    # A consumer of the group reads the event and dies before acknowledging it.
    await raw.xreadgroup(group, "dead-consumer", {writer.stream_key: ">"}, count=10)
    assert (await raw.xpending(writer.stream_key, group))["pending"] == 1

    restarted = RedisStore(
        writer_url(raw),
        NAMESPACE,
        secret=b"team-secret",
        consumer_group=group,
        block_ms=100,
        claim_idle_ms=50,
        claim_interval=0.1,
    )
    seen = recorder(restarted)
    await restarted.start()
    try:
        await until_true(lambda: len(seen) == 1, "the change to be delivered")
        assert seen[0].entry == entry(3)
        await until(
            lambda: nothing_pending(raw, writer.stream_key, group),
            "the claimed event to be acknowledged",
        )
    finally:
        await restarted.aclose()


def writer_url(raw: Any) -> str:
    kwargs = raw.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}/0"


async def test_poisoned_stream_entries_are_acknowledged_and_sync_continues(
    session: Callable[..., Any], raw: Any
) -> None:
    one, two = await session(), await session()
    seen = recorder(two)
    await raw.xadd(one.stream_key, {"garbage": b"\xff\xfe"})
    await raw.xadd(one.stream_key, {"op": "put", "id": "x", "src": "y", "key": "nope", "v": "{"})
    await raw.xadd(
        one.stream_key,
        {
            "op": "put",
            "id": "z",
            "src": "y",
            "key": key_to_json(entry(1).key),
            "v": entry(2).to_json(),
        },
    )
    await one.put(entry(4))
    await until_true(lambda: len(seen) == 1, "the change to be delivered")
    assert seen[0].entry == entry(4)
    assert two.state == "up"
    await until(
        lambda: nothing_pending(raw, one.stream_key, two.group),
        "every stream entry to be acknowledged",
    )


async def test_redis_killed_and_restarted_mid_session_is_survived_and_sync_resumes(
    session: Callable[..., Any], redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    one, two = await session(), await session()
    seen = recorder(two)
    await one.put(entry(1))
    await until_true(lambda: len(seen) == 1, "the change to be delivered")

    redis_server.kill()
    assert await one.get(entry(1).key) is None  # a miss, not an exception
    await one.put(entry(2))
    await until_true(lambda: one.state == "down" and two.state == "down", "both stores to be down")
    assert await two.hottest(5) == []

    redis_server.start()  # same port, empty: the groups are gone too
    await until_true(lambda: one.state == "up" and two.state == "up", "both stores to be up")
    await one.put(entry(3))
    await until_true(lambda: any(c.entry == entry(3) for c in seen), "the put after the restart")
    assert await two.get(entry(3).key) == entry(3)
    messages = [r.getMessage() for r in caplog.records if r.name == "cache.l2.base"]
    # One line per store when it goes down and one when it returns, not one per call.
    assert sum("is down" in m for m in messages) == 2
    assert sum("back up" in m for m in messages) == 2


async def test_redis_keys_are_hmac_hex_and_hold_no_source_or_namespace_text(
    session: Callable[..., Any], raw: Any
) -> None:
    store = await session()
    for i in range(5):
        await store.put(entry(i))
    await store.get(entry(0).key)
    keys = [k.decode() async for k in raw.scan_iter("*")]
    assert keys
    for key in keys:
        assert re.fullmatch(r"scopecache:[ehs]:[0-9a-f]{64}", key), key
    assert not any("models.example" in k or "SECRET_SOURCE" in k for k in keys)
    other_secret = await session(secret=b"another-secret")
    assert other_secret.entry_key(entry(0).key) != store.entry_key(entry(0).key)
    assert await other_secret.get(entry(0).key) is None


async def test_entries_expire_and_oversized_values_are_not_stored(
    session: Callable[..., Any], raw: Any
) -> None:
    store = await session(ttl_seconds=120, max_value_bytes=400)
    await store.put(entry(1))
    assert 0 < await raw.ttl(store.entry_key(entry(1).key)) <= 120
    await store.put(entry(2, "x" * 1000))
    assert await store.get(entry(2).key) is None
    assert store.state == "up"


async def test_hottest_returns_the_most_hit_entries_of_the_namespace(
    session: Callable[..., Any], raw: Any
) -> None:
    store = await session()
    for i in range(4):
        await store.put(entry(i))
    for _ in range(3):
        await store.get(entry(2).key)
    await store.get(entry(1).key)

    async def hits_recorded() -> bool:  # hits are counted in the background, after serving
        score = await raw.zscore(store.hot_key, store.entry_key(entry(1).key))
        return bool(score == 1.0)

    await until(hits_recorded, "the hits to be recorded")
    hot = await store.hottest(2)
    assert hot == [entry(2), entry(1)]

"""The SQLite L2: storage, isolation, limits, migration, live sharing and recovery."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from cache.entry import CachedCompletion
from cache.keys import LineAnchor, ScopeKey
from cache.l2 import L2Change, MemoryHub, MemoryStore, NullStore, SqliteStore
from cache.l2.sqlite.schema import CURRENT_VERSION
from cache.l2.tiers import l2_namespace, open_l2, prewarm
from tests.support.text import lines_text


def entry(i: int, text: str = "return x", *, created_at: float = 0.0) -> CachedCompletion:
    key = ScopeKey.build(
        language="python",
        scope_depth=1,
        node_type="return_statement",
        parent_type="block",
        scope_text=f"def f{i}(x):\n    ",
        suffix_text="",
    )
    anchor = LineAnchor.build(
        language="python", context=lines_text([f"def f{i}(x):"]), suffix_text=""
    )
    return CachedCompletion(
        key=key, anchor=anchor, line_prefix="    ", text=f"{text} + {i}", created_at=created_at
    )


class FakeClock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def open_store(tmp_path: Path) -> AsyncIterator[Callable[..., SqliteStore]]:
    stores: list[SqliteStore] = []

    def make(namespace: str = "http://up/v1|model-a|", **kwargs: object) -> SqliteStore:
        kwargs.setdefault("poll_interval", 0)
        path = kwargs.pop("path", tmp_path / "l2.sqlite")
        store = SqliteStore(path, namespace, **kwargs)  # type: ignore[arg-type]
        stores.append(store)
        return store

    yield make
    for store in stores:
        await store.aclose()


async def test_put_then_get_returns_the_same_entry(open_store: Callable[..., SqliteStore]) -> None:
    store = open_store()
    await store.start()
    await store.put(entry(1))
    assert await store.get(entry(1).key) == entry(1)
    assert await store.get(entry(2).key) is None
    assert (
        store.stats() | {"kind": "sqlite", "state": "up", "hits": 1, "misses": 1, "size": 1}
        == store.stats()
    )


async def test_put_replaces_the_entry_under_the_same_key(
    open_store: Callable[..., SqliteStore],
) -> None:
    store = open_store()
    await store.start()
    await store.put(entry(1, "old"))
    await store.put(entry(1, "new"))
    got = await store.get(entry(1).key)
    assert got is not None and got.text.startswith("new")


async def test_entries_of_one_namespace_are_never_returned_for_another(
    open_store: Callable[..., SqliteStore],
) -> None:
    model_a, model_b = open_store("http://up/v1|model-a|"), open_store("http://up/v1|model-b|")
    await model_a.start()
    await model_b.start()
    await model_a.put(entry(1))
    assert await model_b.get(entry(1).key) is None
    assert await model_b.hottest(10) == []
    assert await model_a.get(entry(1).key) == entry(1)


async def test_namespace_is_stored_hashed(
    open_store: Callable[..., SqliteStore], tmp_path: Path
) -> None:
    store = open_store("https://secret-host.example/v1|model-a|team")
    await store.start()
    await store.put(entry(1))
    raw = (tmp_path / "l2.sqlite").read_bytes() + (tmp_path / "l2.sqlite-wal").read_bytes()
    assert b"secret-host" not in raw
    assert store.namespace_id.encode() in raw


async def test_entry_older_than_ttl_is_a_miss(open_store: Callable[..., SqliteStore]) -> None:
    clock = FakeClock()
    store = open_store(ttl_seconds=60, clock=clock)
    await store.start()
    await store.put(entry(1))
    clock.now += 59
    assert await store.get(entry(1).key) is not None
    clock.now += 2
    assert await store.get(entry(1).key) is None
    assert await store.hottest(10) == []


async def test_size_cap_evicts_the_least_recently_used(
    open_store: Callable[..., SqliteStore],
) -> None:
    clock = FakeClock()
    store = open_store(max_entries=5, clock=clock)
    await store.start()
    for i in range(5):
        clock.now += 1
        await store.put(entry(i))
    clock.now += 1
    assert await store.get(entry(0).key) is not None  # 0 is now the most recently used
    for i in range(5, 8):
        clock.now += 1
        await store.put(entry(i))
    present = [i for i in range(8) if await store.get(entry(i).key) is not None]
    assert present == [0, 4, 5, 6, 7]
    assert store.stats()["size"] == 5


async def test_hottest_orders_by_hits_then_recency(open_store: Callable[..., SqliteStore]) -> None:
    clock = FakeClock()
    store = open_store(clock=clock)
    await store.start()
    for i in range(4):
        clock.now += 1
        await store.put(entry(i))
    for _ in range(3):
        await store.get(entry(2).key)
    await store.get(entry(0).key)
    hot = await store.hottest(3)
    assert [e.text for e in hot] == [entry(i).text for i in (2, 0, 3)]


async def test_invalidate_removes_the_entry(open_store: Callable[..., SqliteStore]) -> None:
    store = open_store()
    await store.start()
    await store.put(entry(1))
    await store.invalidate(entry(1).key)
    assert await store.get(entry(1).key) is None


async def test_second_store_on_the_same_file_sees_puts_and_invalidations_as_changes(
    open_store: Callable[..., SqliteStore],
) -> None:
    first, second = open_store(), open_store()
    await first.start()
    await second.start()
    seen: list[L2Change] = []
    second.subscribe(seen.append)
    first_seen: list[L2Change] = []
    first.subscribe(first_seen.append)

    await first.put(entry(1))
    assert await second.poll_changes() == 1
    assert seen == [L2Change("put", entry(1).key, entry(1))]
    assert await second.get(entry(1).key) == entry(1)

    await first.invalidate(entry(1).key)
    await second.poll_changes()
    assert seen[-1] == L2Change("invalidate", entry(1).key)
    assert await first.poll_changes() == 0  # its own writes are not echoed back
    assert first_seen == []


async def test_every_entry_a_store_hands_out_is_marked_as_read_from_l2(
    open_store: Callable[..., SqliteStore],
) -> None:
    first, second = open_store(), open_store()
    await first.start()
    await second.start()
    seen: list[L2Change] = []
    second.subscribe(seen.append)
    await first.put(entry(1))
    await second.poll_changes()
    got = await second.get(entry(1).key)
    assert got is not None and got.from_l2
    assert [e.from_l2 for e in await second.hottest(1)] == [True]
    assert seen[0].entry is not None and seen[0].entry.from_l2
    assert not entry(1).from_l2  # what the writer holds is its own answer


async def test_changes_iterator_delivers_from_the_background_poller(
    open_store: Callable[..., SqliteStore],
) -> None:
    writer, reader = open_store(), open_store(poll_interval=0.01)
    await writer.start()
    await reader.start()
    feed = reader.changes()
    pending = asyncio.ensure_future(anext(feed))
    await asyncio.sleep(0)
    await writer.put(entry(7))
    change = await asyncio.wait_for(pending, timeout=5)
    assert change.entry == entry(7)
    await feed.aclose()


async def test_other_namespace_changes_are_not_delivered(
    open_store: Callable[..., SqliteStore],
) -> None:
    model_a, model_b = open_store("a"), open_store("b")
    await model_a.start()
    await model_b.start()
    await model_a.put(entry(1))
    assert await model_b.poll_changes() == 0


def write_version_1_file(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version VALUES (1);
        CREATE TABLE entries (ns TEXT NOT NULL, digest TEXT NOT NULL, value TEXT NOT NULL,
            created_at REAL NOT NULL, last_used REAL NOT NULL, PRIMARY KEY (ns, digest));
        """
    )
    from cache.l2 import namespace_id

    conn.execute(
        "INSERT INTO entries VALUES (?, ?, ?, 1000.0, 1000.0)",
        (namespace_id("ns"), entry(1).key.digest(), entry(1).to_json()),
    )
    conn.commit()
    conn.close()


async def test_file_from_schema_version_1_is_migrated_and_keeps_its_entries(
    open_store: Callable[..., SqliteStore], tmp_path: Path
) -> None:
    write_version_1_file(tmp_path / "l2.sqlite")
    store = open_store("ns", clock=FakeClock(1001.0))
    await store.start()
    assert store.state == "up"
    assert await store.get(entry(1).key) == entry(1)
    await store.put(entry(2))
    assert [e.text for e in await store.hottest(5)] == [entry(1).text, entry(2).text]
    conn = sqlite3.connect(tmp_path / "l2.sqlite")
    assert conn.execute("SELECT version FROM schema_version").fetchone()[0] == CURRENT_VERSION
    conn.close()


async def test_garbage_file_is_moved_aside_and_a_fresh_store_works(
    open_store: Callable[..., SqliteStore], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "l2.sqlite").write_bytes(b"this is not a database\0" * 500)
    store = open_store()
    await store.start()
    assert store.state == "up"
    await store.put(entry(1))
    assert await store.get(entry(1).key) == entry(1)
    aside = list(tmp_path.glob("l2.sqlite.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not")
    assert any(
        "damaged" in r.getMessage() and "moved it to" in r.getMessage() for r in caplog.records
    )


async def test_truncated_database_is_moved_aside_and_recovered(
    open_store: Callable[..., SqliteStore], tmp_path: Path
) -> None:
    path = tmp_path / "l2.sqlite"
    first = open_store()
    await first.start()
    for i in range(300):
        await first.put(entry(i, "x" * 200))
    await first.aclose()
    conn = sqlite3.connect(path)  # fold the WAL into the main file, then cut it short
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    size = path.stat().st_size
    with path.open("r+b") as f:
        f.truncate(size // 2)

    second = open_store()
    await second.start()
    await second.put(entry(1))
    assert second.state == "up"
    assert await second.get(entry(1).key) == entry(1)
    assert list(tmp_path.glob("l2.sqlite.corrupt-*"))


async def test_unwritable_location_makes_the_store_down_and_callers_get_misses(
    open_store: Callable[..., SqliteStore], tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    store = open_store(path=blocker / "sub" / "l2.sqlite")
    await store.start()
    assert store.state == "down"
    await store.put(entry(1))
    assert await store.get(entry(1).key) is None
    assert await store.hottest(5) == []
    assert store.stats()["state"] == "down" and store.stats()["errors"] >= 1


async def test_read_only_directory_makes_the_store_down(
    open_store: Callable[..., SqliteStore], tmp_path: Path
) -> None:
    import os

    if os.geteuid() == 0:
        pytest.skip("root ignores directory permissions")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        store = open_store(path=locked / "l2.sqlite")
        await store.start()
        await store.put(entry(1))
        assert store.state == "down"
        assert await store.get(entry(1).key) is None
    finally:
        locked.chmod(0o700)


async def test_store_comes_back_up_by_itself_when_the_location_is_fixed(
    open_store: Callable[..., SqliteStore], tmp_path: Path
) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("in the way")
    store = open_store(path=blocker / "l2.sqlite", retry_initial=0.0)
    await store.start()
    assert store.state == "down"
    blocker.unlink()
    await store.put(entry(1))
    assert store.state == "up"
    assert await store.get(entry(1).key) == entry(1)


async def test_null_store_always_misses() -> None:
    store = NullStore("ns")
    await store.start()
    await store.put(entry(1))
    assert await store.get(entry(1).key) is None
    assert store.stats()["state"] == "off"


async def test_memory_fake_shares_between_instances_on_one_hub_and_degrades() -> None:
    hub = MemoryHub()
    one, two = MemoryStore("ns", hub=hub), MemoryStore("ns", hub=hub)
    seen: list[L2Change] = []
    two.subscribe(seen.append)
    await one.put(entry(1))
    assert seen == [L2Change("put", entry(1).key, entry(1))]
    assert await two.get(entry(1).key) == entry(1)
    hub.down = True
    assert await two.get(entry(1).key) is None
    assert two.state == "down"
    hub.down = False
    assert await two.get(entry(1).key) == entry(1)
    assert two.state == "up"


async def test_prewarm_hands_the_hottest_entries_to_l1_hottest_last(
    open_store: Callable[..., SqliteStore],
) -> None:
    clock = FakeClock()
    store = open_store(clock=clock)
    await store.start()
    for i in range(5):
        clock.now += 1
        await store.put(entry(i))
    for _ in range(2):
        await store.get(entry(3).key)
    l1: dict[ScopeKey, CachedCompletion] = {}
    assert await prewarm(store, lambda e: l1.__setitem__(e.key, e), 2) == 2
    assert list(l1) == [entry(4).key, entry(3).key]


async def test_open_l2_builds_the_configured_tier(tmp_path: Path) -> None:
    ns = l2_namespace("http://up/v1/", "model-a", "team")
    assert ns != l2_namespace("http://up/v1", "model-b", "team")
    assert isinstance(open_l2("none", namespace=ns), NullStore)
    store = open_l2("sqlite", namespace=ns, sqlite_path=str(tmp_path / "x.sqlite"))
    assert isinstance(store, SqliteStore) and store.path == tmp_path / "x.sqlite"
    await store.aclose()
    with pytest.raises(ValueError):
        open_l2("memcached", namespace=ns)


def test_redis_store_without_the_client_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cache.l2 import L2MissingExtra
    from cache.l2.redis import RedisStore

    monkeypatch.setitem(sys.modules, "redis.asyncio", None)  # as if not installed
    with pytest.raises(L2MissingExtra, match=r"scopecache\[redis\]"):
        RedisStore("redis://127.0.0.1:1/0", "ns")

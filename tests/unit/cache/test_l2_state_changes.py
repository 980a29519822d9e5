"""``L2Store.on_state_change``: one call per transition, never one per failed call."""

from __future__ import annotations

from cache.entry import CachedCompletion
from cache.keys import LineAnchor, ScopeKey
from cache.l2.base import L2Store
from cache.l2.errors import L2ReadOnly, L2Unavailable

KEY = ScopeKey("python", "1-call-block", 1, 2)


class FlakyStore(L2Store):
    """An L2 whose every call fails while ``broken`` is set."""

    kind = "flaky"

    def __init__(self) -> None:
        super().__init__("ns", retry_initial=0.0, retry_max=0.0)
        self.broken = False

    def _check(self) -> None:
        if self.broken:
            raise L2Unavailable("disk full")

    async def _get(self, key: ScopeKey) -> CachedCompletion | None:
        self._check()
        return None

    async def _put(self, entry: CachedCompletion) -> None:
        self._check()

    async def _invalidate(self, key: ScopeKey) -> None:
        self._check()

    async def _hottest(self, limit: int) -> list[CachedCompletion]:
        self._check()
        return []


async def test_state_listener_hears_down_once_and_up_once() -> None:
    store = FlakyStore()
    heard: list[tuple[str, str]] = []
    store.on_state_change(lambda state, reason: heard.append((state, reason)))
    await store.get(KEY)
    assert heard == []
    store.broken = True
    for _ in range(5):
        await store.get(KEY)
    assert heard == [("down", "disk full")]
    store.broken = False
    await store.get(KEY)
    await store.get(KEY)
    assert heard == [("down", "disk full"), ("up", "")]


async def test_failing_listener_does_not_break_the_store() -> None:
    store = FlakyStore()

    def explode(state: str, reason: str) -> None:
        raise RuntimeError("listener bug")

    store.on_state_change(explode)
    store.broken = True
    assert await store.get(KEY) is None
    assert store.state == "down"


async def test_closed_store_tells_no_one() -> None:
    store = FlakyStore()
    heard: list[str] = []
    store.on_state_change(lambda state, reason: heard.append(state))
    await store.aclose()
    store.broken = True
    await store.get(KEY)
    assert heard == []


class FullDiskStore(FlakyStore):
    """An L2 on a full disk: reads work, writes fail while ``full`` is set."""

    kind = "full-disk"

    def __init__(self) -> None:
        super().__init__()
        self.full = False

    async def _put(self, entry: CachedCompletion) -> None:
        if self.full:
            raise L2ReadOnly("database or disk is full")

    async def _invalidate(self, key: ScopeKey) -> None:
        if self.full:
            raise L2ReadOnly("database or disk is full")


def an_entry() -> CachedCompletion:
    anchor = LineAnchor.build(language="python", context="def f():\n", suffix_text="")
    return CachedCompletion(key=KEY, anchor=anchor, line_prefix="    ", text="return 1")


async def test_a_full_disk_is_back_only_when_a_write_works_not_when_a_read_does() -> None:
    store = FullDiskStore()
    heard: list[str] = []
    store.on_state_change(lambda state, reason: heard.append(state))
    store.full = True
    await store.put(an_entry())
    for _ in range(3):  # reads keep working on a full disk: no flapping up and down
        await store.get(KEY)
        await store.put(an_entry())
    assert heard == ["down"] and store.state == "down"
    store.full = False
    await store.get(KEY)
    assert heard == ["down"]
    await store.put(an_entry())
    assert heard == ["down", "up"] and store.state == "up"


async def test_an_outage_that_fails_reads_too_ends_with_a_working_read() -> None:
    store = FlakyStore()
    heard: list[str] = []
    store.on_state_change(lambda state, reason: heard.append(state))
    store.broken = True
    await store.put(an_entry())
    store.broken = False
    await store.get(KEY)
    assert heard == ["down", "up"]

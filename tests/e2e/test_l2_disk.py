"""The SQLite L2 on a disk that fills up, or that is read-only, under the real server.

The cache directory is a small tmpfs mounted for the test, so the failures
are the kernel's own ENOSPC and EROFS. Root ignores directory permissions,
but not a full or read-only file system. Where mounting is not allowed (not
root, no CAP_SYS_ADMIN), the tests are skipped with the reason.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.client import ServerProcess
from tests.support import conditions
from tests.support.reference import ReferenceService

pytestmark = pytest.mark.e2e

#: distinct functions, so every completion is a new scope and a new L2 entry
FUNCTIONS = 24


def corpus_text() -> str:
    return "".join(
        f'def greet_{i}(name):\n    message = "Hello {i}, " + name.title()\n    return message\n\n'
        for i in range(FUNCTIONS)
    )


def document(i: int) -> tuple[str, str]:
    return f"file:///work/project/greet_{i}.py", f"def greet_{i}(name):\n    message = "


def expected(i: int) -> str:
    return f'"Hello {i}, " + name.title()'


@contextmanager
def tmpfs(where: Path, size_kib: int) -> Iterator[Path]:
    """A tmpfs of ``size_kib`` KiB mounted at ``where`` (skips the test if not allowed)."""
    where.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size_kib}k,mode=0755", "tmpfs", str(where)]
    try:
        result = subprocess.run(mount, capture_output=True, text=True, timeout=30, check=False)
    except FileNotFoundError:
        pytest.skip("no mount command")
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30, check=False)


def fill(directory: Path) -> Path:
    """Write a file until the file system is full; returns it."""
    filler = directory / "filler.bin"
    chunk = b"\0" * 4096
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError:  # ENOSPC: the disk is full
            pass
    return filler


def options(svc: ReferenceService, sqlite_path: Path) -> dict[str, Any]:
    return {
        "endpoint": svc.url,
        "model": "m",
        "transport": {"caFile": str(svc.ca_file), "keepWarmSeconds": 0},
        "cache": {"l2": "sqlite", "sqlitePath": str(sqlite_path)},
        "speculative": {"enabled": False},
    }


def messages(server: ServerProcess, text: str) -> list[str]:
    return [m.message for m in server.messages if text in m.message]


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ReferenceService]:
    corpus = tmp_path / "corpus" / "greet.py"
    corpus.parent.mkdir()
    corpus.write_text(corpus_text())
    with ReferenceService(tls=True, corpus=[corpus]) as svc:
        yield svc


async def until(server: ServerProcess, check: Callable[[dict[str, Any]], bool]) -> None:
    """Wait until ``check`` holds for the server's L2 stats (a guard, not a timing)."""

    async def holds() -> bool:
        return check((await server.stats())["l2"])

    await conditions.until(holds, "the L2 stats to match")


async def complete(server: ServerProcess, i: int) -> str | None:
    uri, text = document(i)
    server.open(uri, text)
    return await server.inline_text(uri, 1, 14)


async def test_a_disk_that_fills_up_mid_session_costs_the_l2_only_and_is_survived(
    service: ReferenceService, tmp_path: Path
) -> None:
    with tmpfs(tmp_path / "cache", 512) as cache_dir:
        db = cache_dir / "l2.sqlite"
        async with ServerProcess(options(service, db)) as server:
            assert await complete(server, 0) == expected(0)
            await until(server, lambda l2: l2["size"] == 1)  # shared in the background

            filler = fill(cache_dir)
            served = [await complete(server, i) for i in range(1, FUNCTIONS // 2)]
            assert served == [expected(i) for i in range(1, FUNCTIONS // 2)]
            await until(server, lambda l2: l2["state"] == "down")
            stats = await server.stats()
            assert stats["upstreamErrors"] == 0 and stats["errors"] == 0
            down = messages(server, "shared cache unavailable")
            assert len(down) == 1, down
            assert str(db) in down[0] and "full" in down[0]

            # Space comes back: the L2 follows by itself and says so once.
            filler.unlink()
            i = FUNCTIONS // 2
            deadline = asyncio.get_running_loop().time() + 60
            while (await server.stats())["l2"]["state"] != "up":
                assert asyncio.get_running_loop().time() < deadline, "L2 did not come back"
                assert await complete(server, i % FUNCTIONS) == expected(i % FUNCTIONS)
                i += 1
                await asyncio.sleep(0.2)
            assert len(messages(server, "shared cache available again")) == 1
            assert len(messages(server, "shared cache unavailable")) == 1

        # Nothing committed was lost and the file is sound.
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] >= 1


async def test_a_cache_directory_on_a_read_only_file_system_is_reported_once(
    service: ReferenceService, tmp_path: Path
) -> None:
    with tmpfs(tmp_path / "cache", 256) as cache_dir:
        remount = ["mount", "-o", "remount,ro", str(cache_dir)]
        subprocess.run(remount, capture_output=True, timeout=30, check=True)
        db = cache_dir / "scopecache" / "l2.sqlite"
        async with ServerProcess(options(service, db)) as server:
            served = [await complete(server, i) for i in range(3)]
            assert served == [expected(i) for i in range(3)]
            assert await complete(server, 0) == expected(0)  # from L1
            stats = await server.stats()
            assert stats["served"]["upstream"] == 3 and stats["served"]["exact"] == 1
            assert stats["l2"]["state"] == "down"
            down = messages(server, "shared cache unavailable")
            assert len(down) == 1 and str(db) in down[0], down

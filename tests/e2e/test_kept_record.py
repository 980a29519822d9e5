"""The developer's kept record outlives the window, beside the local L2 file and nowhere else.

The real server process, a suggestion shown (the acceptance ledger counts
it), then shut down: the record is in ``kept.sqlite`` beside the SQLite L2
file, for the next window to start from. With no L2 on disk, nothing is
written.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from cache.l2.kept_file import KeptFile
from lsp_server.kit.client import ServerProcess
from lsp_server.kit.upstream_process import ReferenceProcess

pytestmark = pytest.mark.e2e

CORPUS = 'def greet(name):\n    message = "Hello, " + name.title()\n    return message\n'
URI = "file:///work/project/app.py"


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[ReferenceProcess]:
    corpus = tmp_path / "corpus.py"
    corpus.write_text(CORPUS)
    async with ReferenceProcess([corpus]) as svc:
        yield svc


def options(service: ReferenceProcess, cache: dict[str, Any]) -> dict[str, Any]:
    return {
        "endpoint": service.url,
        "provider": "openai",
        "model": "m",
        "transport": {"caFile": service.ca_file},
        "cache": cache,
        "speculative": {"enabled": False},
    }


async def show_one(server: ServerProcess) -> None:
    server.open(URI, "def greet(name):\n    message = ")
    assert await server.inline_text(URI, 1, 14)
    assert (await server.stats())["acceptance"]["shown"] == 1


async def test_the_record_is_kept_beside_the_sqlite_l2_file(
    service: ReferenceProcess, tmp_path: Path
) -> None:
    l2 = tmp_path / "cache" / "l2.sqlite"
    async with ServerProcess(options(service, {"l2": "sqlite", "sqlitePath": str(l2)})) as server:
        await show_one(server)
    rows = KeptFile(l2.with_name("kept.sqlite")).load()
    assert {(row.dimension, row.value) for row in rows} >= {
        ("language", "python"), ("source", "upstream"),
    }  # fmt: skip
    assert all(row.missed > 0 and row.kept == 0 for row in rows)  # shown, not accepted


async def test_without_a_local_l2_nothing_is_written(
    service: ReferenceProcess, tmp_path: Path
) -> None:
    async with ServerProcess(options(service, {"l2": "none"}), env=None) as server:
        await show_one(server)
    assert not list(tmp_path.rglob("kept.sqlite"))

"""Cached answers never cross endpoint, model or tenant.

Two kinds of proof, both through real server processes and the real
reference service: several processes sharing one SQLite L2 file (an answer
stored under model A is served to a later process under A, never under B,
another tenant or another endpoint), and one process whose settings change
from model A to model B (its L1 must not serve A's answers under B).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.client import ServerProcess
from tests.support.greet import EXPECTED, TEXT, URI
from tests.support.reference import ReferenceService

pytestmark = pytest.mark.e2e


def options(
    svc: ReferenceService,
    sqlite_path: Path,
    model: str,
    *,
    endpoint: str | None = None,
    namespace: str = "",
) -> dict[str, Any]:
    return {
        "endpoint": endpoint or svc.url,
        "model": model,
        "transport": {"caFile": str(svc.ca_file), "keepWarmSeconds": 0},
        "cache": {"l2": "sqlite", "sqlitePath": str(sqlite_path), "namespace": namespace},
        "speculative": {"enabled": False},
    }


async def ask(opts: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """One process: open the document, ask once, return the answer and the stats."""
    async with ServerProcess(opts) as server:
        server.open(URI, TEXT)
        answer = await server.inline_text(URI, 1, 14)
        return answer, await server.stats()


def from_cache(stats: dict[str, Any]) -> int:
    served = stats["served"]
    return int(sum(served[s] for s in ("exact", "typed", "l2")))


async def test_shared_sqlite_serves_an_answer_only_under_its_own_model(
    upstream: ReferenceService, tmp_path: Path
) -> None:
    shared = tmp_path / "shared-l2.sqlite"

    answer, stats = await ask(options(upstream, shared, "model-a"))
    assert answer == EXPECTED and stats["served"]["upstream"] == 1
    assert upstream.completion_requests() == 1

    # Another process, same file, model B: not served from A's entry.
    answer, stats = await ask(options(upstream, shared, "model-b"))
    assert answer == EXPECTED
    assert stats["served"]["upstream"] == 1 and from_cache(stats) == 0
    assert upstream.completion_requests() == 2

    # Under model A again (a fresh process): served from the shared file.
    answer, stats = await ask(options(upstream, shared, "model-a"))
    assert answer == EXPECTED
    assert from_cache(stats) == 1 and stats["served"]["upstream"] == 0
    assert upstream.completion_requests() == 2


async def test_shared_sqlite_keeps_tenants_and_endpoints_apart(
    upstream: ReferenceService, tmp_path: Path
) -> None:
    shared = tmp_path / "shared-l2.sqlite"
    await ask(options(upstream, shared, "model-a", namespace="team-red"))
    assert upstream.completion_requests() == 1

    _, stats = await ask(options(upstream, shared, "model-a", namespace="team-blue"))
    assert from_cache(stats) == 0
    assert upstream.completion_requests() == 2

    # The same service under another spelling of its endpoint is another namespace.
    other_endpoint = upstream.url.replace("/v1", "/v1/")
    _, stats = await ask(
        options(upstream, shared, "model-a", endpoint=other_endpoint, namespace="team-red")
    )
    assert from_cache(stats) == 0

    _, stats = await ask(options(upstream, shared, "model-a", namespace="team-red"))
    assert from_cache(stats) == 1


async def test_switching_model_in_one_process_never_serves_the_old_models_answer(
    upstream: ReferenceService, tmp_path: Path
) -> None:
    opts = options(upstream, tmp_path / "l2.sqlite", "model-a")
    async with ServerProcess(opts) as server:
        server.open(URI, TEXT)
        assert await server.inline_text(URI, 1, 14) == EXPECTED
        assert upstream.completion_requests() == 1

        server.configure({"model": "model-b"})
        assert await server.inline_text(URI, 1, 14) == EXPECTED
        assert upstream.completion_requests() == 2, "model B was served model A's answer"

        server.configure({"model": "model-a"})
        assert await server.inline_text(URI, 1, 14) == EXPECTED
        assert upstream.completion_requests() == 2  # A's answer is still A's (L2)

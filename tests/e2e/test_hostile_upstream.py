"""A hostile completion service, through the real server process.

The reference service misbehaves on purpose (``set_fault``): a stream that
never ends, an answer of a megabyte, sixteen megabytes of valid chunks,
bytes that are not UTF-8, a connection cut mid-answer. Through the real
``scopecache serve`` each must give an empty answer (the request is answered,
not left hanging), store nothing in L1 or the SQLite L2 (once the fault is
gone the same position goes upstream again and is then served), and leave
the server running with bounded memory.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.client import ServerProcess
from tests.support.greet import EXPECTED, TEXT, URI
from tests.support.reference import ReferenceService

pytestmark = pytest.mark.e2e

#: a guard against a hang, not a speed assertion
ANSWER_GUARD = 60.0


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def options(svc: ReferenceService, sqlite_path: Path, **transport: Any) -> dict[str, Any]:
    return {
        "endpoint": svc.url,
        "model": "m",
        "transport": {"caFile": str(svc.ca_file), "keepWarmSeconds": 0, **transport},
        "cache": {"l2": "sqlite", "sqlitePath": str(sqlite_path)},
        # no prefetch after a served answer: every upstream request here is one we asked for
        "speculative": {"enabled": False},
    }


FAULTS = [
    # mode, fault parameters, transport settings for this case
    ("never-ending", {"interval": 0.01}, {"readTimeout": 1.0}),
    ("huge", {"size": 1_500_000}, {}),
    ("flood", {"size": 16_000_000}, {}),
    ("invalid-utf8", {}, {}),
    ("reset-mid-stream", {"chunks": 2}, {}),
    ("malformed-sse", {}, {}),
]


@pytest.mark.parametrize(("mode", "params", "transport"), FAULTS, ids=[f[0] for f in FAULTS])
async def test_faulty_answer_is_empty_uncached_and_the_server_keeps_serving(
    upstream: ReferenceService,
    tmp_path: Path,
    mode: str,
    params: dict[str, Any],
    transport: dict[str, Any],
) -> None:
    upstream.set_fault(mode, 1, **params)
    async with ServerProcess(options(upstream, tmp_path / "l2.sqlite", **transport)) as server:
        assert server.pid is not None
        server.open(URI, TEXT)
        before = rss_kb(server.pid)
        answer = await asyncio.wait_for(server.inline_text(URI, 1, 14), ANSWER_GUARD)
        assert answer is None
        assert upstream.completion_requests() == 1
        stats = await server.stats()
        assert stats["cache"]["size"] == 0
        assert stats["upstreamErrors"] == 1
        after = rss_kb(server.pid)

        # The fault was for one request: the same position goes upstream again
        # (nothing was stored in L1 or L2) and is served this time.
        assert await server.inline_text(URI, 1, 14) == EXPECTED
        assert upstream.completion_requests() == 2
        # ... and is now cached.
        assert await server.inline_text(URI, 1, 14) == EXPECTED
        assert upstream.completion_requests() == 2
        assert (await server.stats())["served"]["exact"] == 1

    report = os.environ.get("SCOPECACHE_ROBUSTNESS_REPORT")
    if report:
        with open(report, "a") as fh:
            row = {"case": f"upstream {mode}", "rssBeforeKb": before, "rssAfterKb": after}
            fh.write(json.dumps(row) + "\n")
    # a buffered 16 MB flood alone would add more than 16 MB
    assert after - before < 12 * 1024, (mode, before, after)


async def test_never_ending_stream_is_cut_by_the_default_deadline_too(
    upstream: ReferenceService, tmp_path: Path
) -> None:
    # With default timeouts the trickle is cut by maxResponseChars long before
    # the read deadline; the request still gets an (empty) answer.
    upstream.set_fault("never-ending", 1, interval=0.0005)
    opts = options(upstream, tmp_path / "l2.sqlite", maxResponseChars=400)
    async with ServerProcess(opts) as server:
        server.open(URI, TEXT)
        assert await asyncio.wait_for(server.inline_text(URI, 1, 14), ANSWER_GUARD) is None
        stats = await server.stats()
        assert stats["upstreamErrors"] == 1 and stats["cache"]["size"] == 0
        assert await server.inline_text(URI, 1, 14) == EXPECTED


# -- a hostile disk -----------------------------------------------------------


async def test_unwritable_l2_location_is_reported_once_and_serving_goes_on(
    upstream: ReferenceService, tmp_path: Path
) -> None:
    # A file where the cache directory should be: unwritable even for root
    # (which ignores directory permissions).
    blocker = tmp_path / "cache-dir"
    blocker.write_text("not a directory")
    async with ServerProcess(options(upstream, blocker / "l2.sqlite")) as server:
        server.open(URI, TEXT)
        assert await server.inline_text(URI, 1, 14) == EXPECTED
        assert await server.inline_text(URI, 1, 14) == EXPECTED  # from L1
        stats = await server.stats()
        assert stats["served"]["upstream"] == 1 and stats["served"]["exact"] == 1
        assert stats["l2"]["state"] == "down"
        server.insert(URI, 1, 14, " ")
        await server.inline_text(URI, 1, 15)
        l2_messages = [m for m in server.messages if "shared cache unavailable" in m.message]
        assert len(l2_messages) == 1
        assert str(blocker) in l2_messages[0].message


# -- a service that rejects the token-probability field ------------------------


@pytest.mark.parametrize(("provider", "field"), [("openai", "logprobs"), ("llamacpp", "n_probs")])
async def test_a_service_that_refuses_token_probabilities_is_asked_without_them(
    upstream: ReferenceService, tmp_path: Path, provider: str, field: str
) -> None:
    # Some OpenAI-compatible services answer 400 to a parameter they do not
    # know: the same request goes again at once without it, the developer
    # sees the suggestion, and no later request asks for probabilities.
    upstream.set_fault("refuse-field", -1, field=field)
    opts = {**options(upstream, tmp_path / "l2.sqlite"), "provider": provider}
    opts["cache"] = {"l2": "none"}
    async with ServerProcess(opts) as server:
        server.open(URI, TEXT)
        answer = await asyncio.wait_for(server.inline_text(URI, 1, 14), ANSWER_GUARD)
        assert answer == EXPECTED
        stats = await server.stats()
        assert stats["upstreamErrors"] == 0
        assert upstream.stats()["faultsApplied"] == 1
        assert (await server.clear_cache())["cleared"] >= 1
        assert await server.inline_text(URI, 1, 14) == EXPECTED
        assert upstream.stats()["faultsApplied"] == 1
        endpoint = "/v1/completions" if provider == "openai" else "/infill"
        assert upstream.completion_requests(endpoint) == 3

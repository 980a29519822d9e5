"""The real ``scopecache serve`` process against a real llama.cpp server.

The server is llama.cpp's own HTTP server (``llama-server``'s code, from the
xllamacpp wheel) over a tiny random-weight model written at test time: its
answers are gibberish, and these tests are about the protocol, the detected
path, streaming, cancellation and the token numbers the server reports.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server.kit.client import ServerProcess
from tests.support import conditions
from tests.support.backend import REQUEST, started_backend
from tests.support.llamacpp import LlamaCppServer
from transport.backend import is_cut
from transport.options import EndpointOptions

pytestmark = pytest.mark.e2e

URI = "file:///work/project/shapes.py"
TEXT = (
    "import math\n\n\n"
    "def area(radius):\n"
    "    return math.pi * radius ** 2\n\n\n"
    "def circumference(radius):\n"
    "    return \n\n\n"
    "print(area(2), circumference(2))\n"
)
LINE, COLUMN = 8, 11
#: generous: a loaded 2-core machine runs the whole suite beside these tests
DEADLINE = 30.0


def settings(endpoint: str, **extra: Any) -> dict[str, Any]:
    """Only the endpoint (and what a test is about): everything else is the default."""
    return {
        "endpoint": endpoint,
        "cache": {"l2": "none"},
        "speculative": {"enabled": False},
        **extra,
    }


async def wait_for(check: Callable[[], bool], what: str) -> None:
    """Poll ``check`` (run in a thread: it talks to the server) until true, or fail."""
    deadline = time.monotonic() + DEADLINE
    while not await asyncio.to_thread(check):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {DEADLINE:.0f} s")
        await asyncio.sleep(0.02)


@pytest.mark.parametrize(
    ("provider", "path", "extra"),
    [
        ("auto", "", {}),
        ("auto", "/v1", {}),
        ("llamacpp", "", {}),
        ("llamacpp", "/v1", {}),
        ("openai", "", {}),
        ("openai", "/v1", {}),
        ("openai", "/v1", {"completion": {"fimTemplate": "codellama"}}),
    ],
)
async def test_each_provider_path_streams_a_completion_from_llama_cpp(
    llama_server: LlamaCppServer, provider: str, path: str, extra: dict[str, Any]
) -> None:
    options = settings(llama_server.url + path, provider=provider, **extra)
    async with ServerProcess(options) as server:
        server.open(URI, TEXT)
        first = await server.inline_text(URI, LINE, COLUMN)
        assert first
        assert await server.inline_text(URI, LINE, COLUMN) == first
        stats = await server.stats()
    assert stats["served"]["upstream"] == 1 and stats["served"]["exact"] == 1
    assert stats["upstreamErrors"] == 0
    assert stats["provider"]["configured"] == provider
    expected_path = "/infill" if provider in ("auto", "llamacpp") else "/v1/completions"
    assert stats["provider"]["path"] == expected_path
    if provider != "openai":
        assert stats["provider"]["detected"] == "llamacpp"
    assert stats["tokens"]["prompt"] > 0 and stats["tokens"]["generated"] > 0


async def test_auto_reports_the_servers_token_numbers_and_its_kv_cache_reuse(
    llama_server: LlamaCppServer,
) -> None:
    async with ServerProcess(settings(llama_server.url)) as server:
        server.open(URI, TEXT)
        assert await server.inline_text(URI, LINE, COLUMN)
        # the same prefix one character further: the server reuses its KV cache
        server.insert(URI, LINE, COLUMN, "2")
        assert await server.inline_text(URI, LINE, COLUMN + 1) is not None
        stats = await stats_after_answers(server, 2)
    tokens = stats["tokens"]
    assert tokens["answers"] == 2
    assert tokens["cached"] > 0
    assert tokens["prompt"] == tokens["evaluated"] + tokens["cached"]
    assert stats["provider"]["contextTokens"] == llama_server.context_per_slot
    assert stats["provider"]["promptTokenLimit"] <= llama_server.context_per_slot


async def stats_after_answers(server: ServerProcess, count: int = 1) -> dict[str, Any]:
    """The stats once ``count`` answers' token numbers are in and no stream is open.

    An answer is shown at its first line; the server reports its prompt
    tokens at the stream's end, which on a loaded host can come later.
    """
    stats: dict[str, Any] = {}

    async def settled() -> bool:
        stats.update(await server.stats())
        return int(stats["tokens"]["answers"]) >= count and stats["inflight"] == 0

    await conditions.until(settled, f"the token numbers of {count} answers")
    return stats


LONG_TEXT = "".join(f"def f{i}(value):\n    return value + {i}\n\n\n" for i in range(400))
LONG_TEXT += "def last(value):\n    return "


async def test_a_long_file_is_kept_within_the_configured_limit_so_the_server_cuts_nothing(
    llama_server: LlamaCppServer,
) -> None:
    limit = llama_server.batch
    options = settings(llama_server.url, completion={"maxPromptTokens": limit})
    async with ServerProcess(options) as server:
        server.open(URI, LONG_TEXT)
        assert await server.inline_text(URI, LONG_TEXT.count("\n"), 11)
        stats = await stats_after_answers(server, 1)
    assert stats["upstreamErrors"] == 0
    assert 0 < stats["tokens"]["prompt"] <= limit
    assert stats["provider"]["promptsCutByServer"] == 0


async def test_a_prompt_the_server_cut_is_noticed_and_the_next_ones_fit(
    llama_server: LlamaCppServer,
) -> None:
    # maxPromptTokens left at llama-server's default -b (2048): this server's is smaller
    line = LONG_TEXT.count("\n")
    async with ServerProcess(settings(llama_server.url)) as server:
        server.open(URI, LONG_TEXT)
        assert await server.inline_text(URI, line, 11)
        first = await stats_after_answers(server, 1)
        server.insert(URI, line, 11, "v")
        assert await server.inline_text(URI, line, 12)
        # typed through the first stream or answered by a second one: either way settled
        second = await stats_after_answers(server)
    assert first["provider"]["promptsCutByServer"] == 1
    assert first["provider"]["promptTokenLimit"] < llama_server.batch
    assert second["provider"]["promptsCutByServer"] == 1
    assert second["tokens"]["prompt"] - first["tokens"]["prompt"] < llama_server.batch


async def test_a_stream_nobody_can_use_any_more_is_cancelled_and_stops_generating_on_the_server(
    llama_server: LlamaCppServer,
) -> None:
    # On llama.cpp a stream the editor stopped waiting for is not cancelled for
    # idleness (the user may type into it); closing its document ends it, and
    # the cancel reaches the server: generation stops.
    max_tokens = 4000
    options = settings(llama_server.url, completion={"maxTokens": max_tokens},
                       throttle={"minDelayMs": 0, "maxDelayMs": 0})
    async with ServerProcess(options) as server:
        server.open(URI, TEXT)
        # the connection is open and the service identified before the request
        await server.stats()
        before = await asyncio.to_thread(llama_server.metrics)
        msg_id, pending = server.request(
            "textDocument/inlineCompletion", server.inline_params(URI, LINE, COLUMN)
        )
        await wait_for(llama_server.busy, "the server never started generating")
        server.cancel(msg_id)
        with pytest.raises(JsonRpcException):
            await pending
        assert (await server.stats())["upstreamCancelled"] == 0  # still generating
        server.close(URI)
        await wait_for(lambda: not llama_server.busy(), "generation went on after the cancel")
        after = await asyncio.to_thread(llama_server.metrics)
        predicted = after["tokens_predicted_total"] - before["tokens_predicted_total"]
        assert predicted < max_tokens
        stats = await server.stats()
        assert stats["upstreamCancelled"] == 1 and stats["upstreamCancelledBy"] == {"closed": 1}
        # on HTTP/1.1 the cancel closed that connection; a spare replaces it
        assert stats["transport"]["connectionsClosedByCancel"] == 1
        deadline = time.monotonic() + DEADLINE
        while (await server.stats())["transport"]["connectionsReady"] < 1:
            assert time.monotonic() < deadline, "no spare connection after the cancel"
            await asyncio.sleep(0.02)
        waits = (await server.stats())["transport"]["connectWaits"]
        # the next completion works (a short one: this one is not about limits)
        # and waits for no TCP connect
        server.configure({**options, "completion": {"maxTokens": 16}})
        server.open(URI, TEXT)
        server.insert(URI, LINE, COLUMN, "2")
        assert await server.inline_text(URI, LINE, COLUMN + 1) is not None
        assert (await server.stats())["transport"]["connectWaits"] == waits


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        capture_output=True, text=True, timeout=300, check=False,
    )


def test_replay_of_a_synthesized_session_has_no_errors(
    llama_server: LlamaCppServer, tmp_path: Path
) -> None:
    source = tmp_path / "shapes.py"
    source.write_text(TEXT)
    trace = tmp_path / "session.jsonl"
    synth = run_cli("trace", "synth", str(source), "-o", str(trace), "--seed", "3")
    assert synth.returncode == 0, synth.stderr
    replay = run_cli("replay", str(trace), "--endpoint", llama_server.url, "--json")
    assert replay.returncode == 0, replay.stderr
    result = json.loads(replay.stdout)
    assert result["upstreamRequests"] > 0
    assert result["upstreamErrors"] == 0 and result["errors"] == 0
    assert result["provider"]["detected"] == "llamacpp"
    assert result["tokens"]["prompt"] > 0
    assert result["served"]["upstream"] > 0  # answers arrived (gibberish: few hits)


def test_diagnose_reports_http1_the_detected_server_and_real_token_counts(
    llama_server: LlamaCppServer, tmp_path: Path
) -> None:
    result = run_cli("diagnose", "--endpoint", llama_server.url, "--json", "--samples", "2")
    report = json.loads(result.stdout)
    rows = {m["name"]: m for layer in report["layers"].values() for m in layer}
    assert rows["protocol"]["value"] == "http/1.1"
    assert "llamacpp" in str(rows["server"]["value"])
    assert "/infill" in str(rows["server"]["hint"])
    assert isinstance(rows["prompt limit"]["value"], int)
    assert rows["prompt tokens"]["value"] > 0  # the server's own count
    assert rows["prompt cut by server"]["verdict"] in ("ok", "slow")


@pytest.mark.parametrize(("provider", "path"), [("llamacpp", ""), ("openai", "/v1")])
async def test_an_answer_cut_at_max_tokens_arrives_marked_cut(
    llama_server: LlamaCppServer, provider: str, path: str
) -> None:
    # llama.cpp's own finish reason, streamed: stop_type "limit" on /infill,
    # finish_reason "length" on /v1/completions
    options = EndpointOptions(endpoint=llama_server.url + path, provider=provider)
    request = dataclasses.replace(REQUEST, prefix=TEXT[:120], max_tokens=2)
    async with started_backend(options) as backend:
        chunks = [c async for c in backend.stream(request)]
    assert "".join(chunks) and is_cut(chunks[-1])
    assert not any(is_cut(c) for c in chunks[:-1])

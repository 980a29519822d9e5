"""Prompts the real llama.cpp server answers from its KV cache, through ``scopecache serve``.

A short editing session inside files larger than the prompt budget, replayed
through the real server process against llama.cpp's own HTTP server (tiny
random-weight model, prompt caching on): the token numbers are the ones the
server reported in every answer's ``timings``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.replay import replay_trace
from tests.bench.bench_kvcache import DEFAULTS, HELD_OUT, SMALL_BATCH, sized_session
from tests.support.llamacpp import LlamaCppServer

pytestmark = pytest.mark.e2e

#: a batch large enough that /infill cuts none of these prompts
BATCH = 2048


def settings(
    window: str, *, cross_file: bool = False, completion: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "provider": "llamacpp",
        "cache": {"policy": "none", "l2": "none"},
        "speculative": {"enabled": False},
        "completion": {
            "promptWindow": window,
            "prefixChars": 1200,
            "suffixChars": 300,
            "maxTokens": 2,
            # the server's batch: prompts are sized for it, not for the presets' 1024
            "maxPromptTokens": BATCH,
            **(completion or {}),
        },
        "context": {"crossFile": cross_file, "maxChars": 600},
    }


async def tokens(
    server: LlamaCppServer, window: str, *, cross_file: bool = False,
    completion: dict[str, Any] | None = None,
) -> dict[str, int]:
    trace = sized_session(100, 5, 1)
    result = await replay_trace(
        trace, endpoint=server.url,
        settings=settings(window, cross_file=cross_file, completion=completion),
    )
    stats = result.server_stats
    assert stats["upstreamErrors"] == 0
    assert stats["tokens"]["prompt"] > 0
    return dict(stats["tokens"])


@pytest.fixture
def llama(tmp_path: Path) -> Any:
    with LlamaCppServer(tmp_path, batch=BATCH, embedding=128) as server:
        yield server


async def test_the_anchored_window_is_mostly_answered_from_the_kv_cache(
    llama: LlamaCppServer,
) -> None:
    ours = await tokens(llama, "anchored")
    today = await tokens(llama, "sliding")
    share = ours["evaluated"] / ours["prompt"]
    # a session this short pays each file's first prompt and one return in full
    assert share <= 0.25
    assert share <= today["evaluated"] / today["prompt"] / 3


async def test_cross_file_chunks_reach_the_server_and_stay_in_its_cache(
    llama: LlamaCppServer,
) -> None:
    alone = await tokens(llama, "anchored")
    with_context = await tokens(llama, "anchored", cross_file=True)
    # the other open file's chunks were read as input_extra ...
    assert with_context["prompt"] > alone["prompt"]
    # ... and evaluated about once, not per request
    assert with_context["evaluated"] / with_context["prompt"] <= 0.25


async def test_suffix_first_prompts_re_evaluate_less_than_infill(llama: LlamaCppServer) -> None:
    infill = await tokens(llama, "anchored")
    # the tiny model has CodeLlama's FIM tokens: the prompt goes to /completion
    spm = await tokens(llama, "anchored", completion={"fimTemplate": "codellama",
                                                      "fimOrder": "spm"})
    assert spm["evaluated"] < infill["evaluated"]


def test_diagnose_reports_how_much_a_keystroke_re_evaluates(llama: LlamaCppServer) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lsp_server", "diagnose", "--endpoint", llama.url,
         "--samples", "1", "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    report = json.loads(done.stdout)
    (line,) = [i for i in report["layers"]["service"] if i["name"] == "server prompt cache"]
    assert line["unit"] == "tokens"
    assert line["verdict"] in ("ok", "slow")
    assert isinstance(line["value"], int) and line["value"] >= 1
    assert "a keystroke apart" in line["hint"]


async def test_a_server_batch_below_the_default_limit_costs_few_prompts(tmp_path: Path) -> None:
    # The test server's default batch (512) keeps 384 prefix tokens. Default
    # budgets: the prompts are sized for a 1024-token batch and the
    # server cuts each one's start to what its 512 keep, a cut the share of
    # tokens read does not tell (388 of about 640). Left unnoticed, every
    # keystroke's prompt starts one token later and is evaluated whole.
    trace = sized_session(120, 6, 1, files=HELD_OUT)
    with LlamaCppServer(tmp_path, batch=SMALL_BATCH, embedding=128) as server:
        result = await replay_trace(trace, endpoint=server.url, settings=DEFAULTS)
    stats = result.server_stats
    assert stats["upstreamErrors"] == 0
    assert stats["provider"]["promptsCutByServer"] >= 1
    tokens = stats["tokens"]
    # before the fix: 16.5% (24 requests evaluated whole); with it 11.1% (13)
    assert tokens["evaluated"] / tokens["prompt"] <= 0.13

"""A real code model slower than the typist: useful suggestions, no cancel of what could serve.

llama.cpp's own server (the xllamacpp wheel) runs Qwen2.5-Coder-0.5B on one
CPU thread (two threads, as the benchmark runs it, slow down tenfold when
anything else runs on a two-core machine; one is steadily slower than the
typing, which is what this test needs). A developer types twelve
lines into an existing file key by key, faster than the model answers, never
accepting; the real ``scopecache serve`` is asked after every key and the
request still outstanding is cancelled at the next key, as editors do.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.code_model import ModelUnavailable, ensure
from tests.support.llamacpp import LlamaCppServer, missing_reason
from tests.support.typing_session import (
    SessionScore,
    code_model_server,
    code_model_session,
    run_scopecache,
    scopecache_settings,
)

pytestmark = pytest.mark.e2e


def _unavailable(reason: str) -> None:
    """Skip where the model or the server cannot be had; in CI that is a failure."""
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def code_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaCppServer]:
    """llama.cpp serving the real code model, for this module."""
    reason = missing_reason()
    if reason is not None:
        _unavailable(reason)
    try:
        model = ensure()
    except ModelUnavailable as exc:
        _unavailable(f"the code model could not be fetched: {exc}")
        raise
    workdir = tmp_path_factory.mktemp("code-model")
    with code_model_server(workdir, Path(model), threads=1) as server:
        yield server


async def test_typing_faster_than_a_real_model_answers_shows_useful_suggestions(
    code_model: LlamaCppServer,
) -> None:
    script = code_model_session("full")
    run = await run_scopecache(script, scopecache_settings(code_model.url), busy_url=code_model.url)
    score = SessionScore.of(run)
    stats = run.extra["stats"]
    pacing = stats["pacing"]
    # the premise: the model answers slower than the developer types
    assert pacing["slowService"], pacing
    assert pacing["answerMs"] > pacing["typingGapMs"]
    assert score.useful >= 1, score
    assert score.chars_saved >= 1, score
    # fewer requests reach the model than there were keys
    assert stats["upstreamRequests"] < score.keys // 4, stats["upstreamRequests"]
    # nothing that could still serve was cancelled: only streams the typing had left
    assert set(stats["upstreamCancelledBy"]) <= {"moved"}, stats["upstreamCancelledBy"]
    assert stats["upstreamErrors"] == 0

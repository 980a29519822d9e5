"""A real code model slower than the typist: more useful suggestions than llama.vim's client.

llama.cpp's own server (the xllamacpp wheel) runs Qwen2.5-Coder-0.5B on one
CPU thread (two threads, as the benchmark runs it, slow down tenfold when
anything else runs on a two-core machine; one is steadily slower than the
typing, which is what this test needs). A developer types twelve lines into
an existing file key by key, faster than the model answers, never
accepting, twice, each time against a freshly started server: into the real
``scopecache serve``, asked after every key with the request still
outstanding cancelled at the next key, as editors do; and into llama.vim's
client (``tests.support.llama_vim``), the peer the README compares with.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from tests.support.code_model import ModelUnavailable, ensure
from tests.support.llama_vim import run_llama_vim
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


ServerFactory = Callable[[], AbstractContextManager[LlamaCppServer]]


@pytest.fixture(scope="module")
def code_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerFactory]:
    """Starts llama.cpp serving the real code model, fresh for each client."""
    reason = missing_reason()
    if reason is not None:
        _unavailable(reason)
    try:
        model = ensure()
    except ModelUnavailable as exc:
        _unavailable(f"the code model could not be fetched: {exc}")
        raise

    def start() -> AbstractContextManager[LlamaCppServer]:
        workdir = tmp_path_factory.mktemp("code-model")
        return code_model_server(workdir, Path(model), threads=1)

    yield start


async def test_typing_faster_than_a_real_model_answers_shows_more_useful_suggestions(
    code_model: ServerFactory,
) -> None:
    script = code_model_session("full")
    with code_model() as server:
        run = await run_scopecache(script, scopecache_settings(server.url), busy_url=server.url)
    with code_model() as server:
        peer = SessionScore.of(await run_llama_vim(script, server.url))
    score = SessionScore.of(run)
    print(f"scopecache: {score}\nllama.vim: {peer}")  # the figures, for the log
    stats = run.extra["stats"]
    pacing = stats["pacing"]
    # the premise: the model answers slower than the developer types
    assert pacing["slowService"], pacing
    assert pacing["answerMs"] > pacing["typingGapMs"]
    # the claim: at least as many useful suggestions as llama.vim's client
    assert score.useful_suggestions >= max(1, peer.useful_suggestions), (score, peer)
    assert score.chars_saved_line >= peer.chars_saved_line, (score, peer)
    # fewer requests reach the model than there were keys
    assert stats["upstreamRequests"] < score.keys // 4, stats["upstreamRequests"]
    # nothing that could still serve was cancelled: only streams the typing had left
    assert set(stats["upstreamCancelledBy"]) <= {"moved"}, stats["upstreamCancelledBy"]
    assert stats["upstreamErrors"] == 0

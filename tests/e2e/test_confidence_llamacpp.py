"""Token probabilities from the real llama.cpp server, and the cut they make with a real model.

The tiny random-weight model gives the real shapes of ``n_probs`` answers
(``/infill``) and of ``logprobs`` on llama.cpp's ``/v1/completions``; the
real code model (Qwen2.5-Coder-0.5B) gives real confidence: sure of
``a + b`` after ``def add(a, b): return``, unsure of a made-up name, and
hesitant somewhere past the start of a loop's condition.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.client import ServerProcess
from tests.support.backend import started_backend
from tests.support.code_model import ModelUnavailable, ensure
from tests.support.llamacpp import LlamaCppServer, missing_reason
from transport.backend import CompletionRequest, ScoredText, chunk_probability
from transport.options import EndpointOptions

pytestmark = pytest.mark.e2e

ASK = CompletionRequest(prefix="def add(a, b):\n    return ", suffix="\n", max_tokens=6,
                        probabilities=True)


@pytest.mark.parametrize("provider", ["llamacpp", "openai"])
async def test_every_chunk_of_a_real_llamacpp_answer_carries_its_probability(
    llama_server: LlamaCppServer, provider: str
) -> None:
    options = EndpointOptions(endpoint=llama_server.url, provider=provider, model="m")
    async with started_backend(options) as backend:
        chunks = [chunk async for chunk in backend.stream(ASK)]
        plain = [chunk async for chunk in backend.stream(
            dataclasses.replace(ASK, probabilities=False)
        )]  # fmt: skip
    text = [chunk for chunk in chunks if chunk]
    assert text and all(isinstance(chunk, ScoredText) for chunk in text), chunks
    assert all(0.0 < (chunk_probability(chunk) or 0.0) <= 1.0 for chunk in text)
    assert not any(isinstance(chunk, ScoredText) for chunk in plain)


@pytest.fixture(scope="module")
def code_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaCppServer]:
    """The real code model on one thread, for this module."""
    reason = missing_reason()
    if reason is not None:
        pytest.skip(reason)
    try:
        model = ensure()
    except ModelUnavailable as exc:
        pytest.skip(f"the code model could not be fetched: {exc}")
    workdir = tmp_path_factory.mktemp("code-model")
    with LlamaCppServer(workdir, model=Path(model), threads=1, slots=1, context=4096,
                        batch=1024) as server:
        yield server


async def test_the_real_model_shows_what_it_is_sure_of_and_holds_back_a_guess(
    code_model: LlamaCppServer,
) -> None:
    settings = {
        "endpoint": code_model.url, "cache": {"l2": "none"},
        "speculative": {"enabled": False}, "completion": {"minProbability": 0.3},
    }  # fmt: skip
    async with ServerProcess(settings) as server:
        server.open("file:///p/add.py", "def add(a, b):\n    return ")
        assert await server.inline_text("file:///p/add.py", 1, 11) == "a + b"
        server.open("file:///p/names.py", 'import os\n\nNAME = "')
        assert await server.inline_text("file:///p/names.py", 2, 8) is None
        stats = await server.stats()
    assert stats["heldBack"]["unsure"] >= 1


async def test_past_its_first_token_the_real_models_suggestion_meets_the_onward_bar(
    code_model: LlamaCppServer, tmp_path: Path
) -> None:
    # The string reader's loop, typed up to "while": the model's answer, as a
    # near-zero bar shows it, and where it first hesitates after its start.
    source = (Path(__file__).parents[2] / "lsp_server/samples/tokenizer.py").read_text()
    lines = source.split("\n")[:56] + ["        while"]
    text, uri = "\n".join(lines), "file:///p/tokenizer.py"
    trace = tmp_path / "session.jsonl"

    def settings(onward: float, **more: Any) -> dict[str, Any]:
        completion = {"minProbability": 0.01, "minOnwardProbability": onward}
        return {"endpoint": code_model.url, "cache": {"l2": "none"},
                "speculative": {"enabled": False}, "completion": completion, **more}

    async with ServerProcess(settings(0.0, recordTrace=str(trace), recordText=True)) as server:
        server.open(uri, text)
        whole = await server.inline_text(uri, 56, 13)
    answer = json.loads(trace.with_name(trace.name + ".answers.jsonl").read_text().split("\n")[0])
    assert whole and answer["answer"].startswith(whole)
    onward = [(int(at), p) for at, p in answer["doubts"] if 0 < at < len(whole)]
    if not onward:
        pytest.fail(f"the model was sure of all of {whole!r}: no hesitation to cut at")
    at, probability = onward[0]
    # a bar just above that token's probability cuts there, and only there
    async with ServerProcess(settings(min(0.99, probability + 0.01))) as server:
        server.open(uri, text)
        cut = await server.inline_text(uri, 56, 13)
    assert cut == (whole[:at] if whole[:at].strip() else None)

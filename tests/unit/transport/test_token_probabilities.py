"""Token probabilities: asked for where the service gives them, read into scored chunks."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import AsyncIterator, Iterable

import pytest

from transport.backend import CompletionRequest, ScoredText, chunk_probability
from transport.options import EndpointOptions
from transport.providers import decode_lines, provider_for

ASKING = CompletionRequest(prefix="x = ", suffix="\n", probabilities=True)


def options(provider: str) -> EndpointOptions:
    return EndpointOptions(endpoint="http://127.0.0.1:8080/v1", model="m", provider=provider)


async def feed(items: Iterable[bytes]) -> AsyncIterator[bytes]:
    for item in items:
        yield item


async def chunks(provider: str, raw: list[bytes]) -> list[str]:
    parsed = provider_for(options(provider)).parse_stream(decode_lines(feed(raw)))
    return [chunk async for chunk in parsed]


def sse(*objs: object) -> list[bytes]:
    return [f"data: {json.dumps(o)}\n\n".encode() for o in objs]


def scores(parts: list[str]) -> list[tuple[str, float | None]]:
    return [(str(part), _round(chunk_probability(part))) for part in parts]


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def test_each_provider_asks_for_probabilities_only_when_told() -> None:
    for provider, field, value in (
        ("llamacpp", "n_probs", 1), ("openai", "logprobs", 1), ("ollama", "logprobs", True),
    ):
        _, asked = provider_for(options(provider)).build_request(ASKING)
        assert asked[field] == value
        _, plain = provider_for(options(provider)).build_request(
            dataclasses.replace(ASKING, probabilities=False)
        )
        assert field not in plain


def _llamacpp_token(text: str, logprob: float) -> dict[str, object]:
    return {"id": 1, "token": text, "bytes": list(text.encode()), "logprob": logprob,
            "top_logprobs": [{"id": 1, "token": text, "logprob": logprob}]}


async def test_llamacpp_events_become_one_scored_chunk_per_token() -> None:
    raw = sse(
        {"content": "a", "stop": False, "completion_probabilities": [_llamacpp_token("a", -0.1)]},
        {"content": " +", "stop": False,
         "completion_probabilities": [_llamacpp_token(" +", math.log(0.5))]},
        {"content": "", "stop": True, "stop_type": "word"},
    )
    assert scores(await chunks("llamacpp", raw)) == [("a", 0.905), (" +", 0.5)]


async def test_llamacpp_held_back_token_lowers_the_text_that_follows() -> None:
    # the newline token's text is held while it may start the stop word "\n\n"
    raw = sse(
        {"content": "", "stop": False,
         "completion_probabilities": [_llamacpp_token("\n", math.log(0.3))]},
        {"content": "\nb", "stop": False,
         "completion_probabilities": [_llamacpp_token("b", math.log(0.9))]},
        {"content": "", "stop": True},
    )
    assert scores(await chunks("llamacpp", raw)) == [("\nb", 0.3)]


async def test_llamacpp_post_sampling_and_older_shapes() -> None:
    raw = sse(
        {"content": "a", "completion_probabilities": [
            {"id": 1, "token": "a", "prob": 0.25, "top_probs": []}]},
        {"content": "b", "completion_probabilities": [
            {"content": "b",
             "probs": [{"tok_str": "c", "prob": 0.6}, {"tok_str": "b", "prob": 0.4}]},
        ]},
        {"content": "", "stop": True},
    )
    assert scores(await chunks("llamacpp", raw)) == [("a", 0.25), ("b", 0.4)]


async def test_openai_token_logprobs_and_llamacpp_content_shape() -> None:
    raw = sse(
        {"choices": [{"text": "foo(", "logprobs": {
            "tokens": ["foo", "("], "token_logprobs": [math.log(0.8), math.log(0.1)]}}]},
        {"choices": [{"text": "x", "logprobs": {"content": [_llamacpp_token("x", 0.0)]}}]},
        {"choices": [{"text": ")", "finish_reason": "stop", "logprobs": None}]},
    ) + [b"data: [DONE]\n\n"]
    assert scores(await chunks("openai", raw)) == [
        ("foo", 0.8), ("(", 0.1), ("x", 1.0), (")", None)
    ]


async def test_tokens_that_do_not_spell_the_text_score_it_as_a_whole() -> None:
    raw = sse(
        {"choices": [{"text": "ab", "logprobs": {
            "tokens": ["a", "X"], "token_logprobs": [math.log(0.9), math.log(0.7)]}}]},
        {"choices": [{"text": "", "finish_reason": "stop"}]},
    ) + [b"data: [DONE]\n\n"]
    assert scores(await chunks("openai", raw)) == [("ab", 0.7)]


async def test_ollama_logprobs() -> None:
    lines = [
        {"response": "x", "done": False, "logprobs": [{"token": "x", "logprob": math.log(0.6)}]},
        {"response": "", "done": True, "done_reason": "stop"},
    ]
    raw = [(json.dumps(line) + "\n").encode() for line in lines]
    assert scores(await chunks("ollama", raw)) == [("x", 0.6)]


async def test_a_service_without_probabilities_yields_plain_text() -> None:
    raw = sse({"content": "abc"}, {"content": "", "stop": True})
    parts = await chunks("llamacpp", raw)
    assert parts == ["abc"] and not isinstance(parts[0], ScoredText)


@pytest.mark.parametrize("bad", [None, "x", [1], [{"logprob": "high"}], [{"logprob": True}]])
async def test_odd_probability_records_are_ignored(bad: object) -> None:
    raw = sse({"content": "abc", "completion_probabilities": bad}, {"content": "", "stop": True})
    assert scores(await chunks("llamacpp", raw)) == [("abc", None)]

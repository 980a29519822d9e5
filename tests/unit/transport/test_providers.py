from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Iterable

import pytest

from transport.backend import CompletionRequest, ContextChunk, is_cut
from transport.errors import UpstreamProtocolError
from transport.options import EndpointOptions
from transport.providers import decode_lines, provider_for

REQUEST = CompletionRequest(prefix="def add(a, b):\n    return ", suffix="\n", stop=("\n\n",))


def options(**changes: object) -> EndpointOptions:
    return EndpointOptions(endpoint="https://svc.test:8443/v1", model="m").replace(**changes)


async def feed(items: Iterable[bytes]) -> AsyncIterator[bytes]:
    for item in items:
        yield item


async def collect(provider_name: str, raw: list[bytes], **changes: object) -> str:
    provider = provider_for(options(provider=provider_name, **changes))
    return "".join([t async for t in provider.parse_stream(decode_lines(feed(raw)))])


def sse(*objs: object) -> list[bytes]:
    return [f"data: {json.dumps(o)}\n\n".encode() for o in objs]


def test_openai_request_carries_prompt_suffix_and_limits() -> None:
    url, body = provider_for(options()).build_request(REQUEST)
    assert url == "https://svc.test:8443/v1/completions"
    assert body["prompt"] == REQUEST.prefix and body["suffix"] == "\n"
    assert body["stream"] is True and body["model"] == "m"
    # a one-line request stops at the line's end, before the configured stops
    assert body["max_tokens"] == REQUEST.max_tokens and body["stop"] == ["\n", "\n\n"]


def test_a_block_request_stops_only_where_configured() -> None:
    _, body = provider_for(options()).build_request(dataclasses.replace(REQUEST, multiline=True))
    assert body["stop"] == ["\n\n"]


def test_llamacpp_request_bounds_generation_time_and_block_indentation() -> None:
    request = dataclasses.replace(REQUEST, multiline=True, max_time_ms=800, indent=4)
    _, body = provider_for(options(provider="llamacpp")).build_request(request)
    assert body["t_max_predict_ms"] == 800 and body["n_indent"] == 4
    assert "stop" not in body or "\n" not in body["stop"]
    _, one_line = provider_for(options(provider="llamacpp")).build_request(
        dataclasses.replace(REQUEST, max_time_ms=800, indent=4)
    )
    assert one_line["stop"][0] == "\n" and "n_indent" not in one_line


def test_fim_template_mode_sends_a_plain_prompt_without_suffix() -> None:
    _, body = provider_for(options(fim_template="qwen")).build_request(REQUEST)
    assert "suffix" not in body
    assert body["prompt"].startswith("<|fim_prefix|>def add")
    assert body["prompt"].endswith("<|fim_suffix|>\n<|fim_middle|>")
    assert "<|endoftext|>" in body["stop"]


def test_llamacpp_and_ollama_requests() -> None:
    url, body = provider_for(options(provider="llamacpp")).build_request(REQUEST)
    assert url == "https://svc.test:8443/infill"
    assert body["input_prefix"] == REQUEST.prefix and body["n_predict"] == REQUEST.max_tokens
    url, body = provider_for(options(provider="ollama")).build_request(REQUEST)
    assert url == "https://svc.test:8443/api/generate"
    assert body["suffix"] == "\n" and body["raw"] is False
    assert body["options"]["num_predict"] == REQUEST.max_tokens
    _, body = provider_for(options(provider="ollama", fim_template="starcoder")).build_request(
        REQUEST
    )
    assert body["raw"] is True and "suffix" not in body


async def test_openai_stream_is_read_until_done() -> None:
    raw = sse({"choices": [{"text": "a + "}]}, {"choices": [{"text": "b"}]}) + [b"data: [DONE]\n\n"]
    assert await collect("openai", raw) == "a + b"


async def test_chunks_split_anywhere_still_parse() -> None:
    whole = b"".join(sse({"choices": [{"text": "h\u00e9llo"}]})) + b": comment\n\ndata: [DONE]\n\n"
    pieces = [whole[i : i + 3] for i in range(0, len(whole), 3)]
    assert await collect("openai", pieces) == "h\u00e9llo"


async def test_llamacpp_stream_ends_at_stop_true() -> None:
    raw = sse({"content": "x", "stop": False}, {"content": "y", "stop": True})
    assert await collect("llamacpp", raw) == "xy"


async def test_ollama_ndjson_ends_at_done() -> None:
    raw = [b'{"response": "1", "done": false}\n', b'{"response": "2", "done": true}\n']
    assert await collect("ollama", raw) == "12"


@pytest.mark.parametrize(
    ("provider", "raw"),
    [
        ("openai", [b"data: {not json\n\n"]),
        ("openai", [b"garbage line\n\n"]),
        ("openai", sse({"choices": [{"text": "cut"}]})),  # no [DONE]: truncated
        ("openai", sse({"nochoices": 1})),
        ("openai", sse({"choices": [{"text": 5}]})),
        ("openai", [b'data: {"choices": [{"text": "\xff\xfe"}]}\n\n', b"data: [DONE]\n\n"]),
        ("llamacpp", sse({"content": "x", "stop": False})),
        ("ollama", [b'{"response": "1"\n']),
        ("ollama", [b'{"response": "1", "done": false}\n']),
    ],
)
async def test_malformed_or_truncated_answers_are_protocol_errors(
    provider: str, raw: list[bytes]
) -> None:
    with pytest.raises(UpstreamProtocolError):
        await collect(provider, raw)


def test_non_streamed_bodies() -> None:
    assert provider_for(options()).parse_body({"choices": [{"text": "t"}]}) == "t"
    assert provider_for(options(provider="llamacpp")).parse_body({"content": "c"}) == "c"
    assert provider_for(options(provider="ollama")).parse_body({"response": "r"}) == "r"
    with pytest.raises(UpstreamProtocolError):
        provider_for(options()).parse_body({"choices": "x"})


CHUNKS = (
    ContextChunk("app/shapes.py", "def area(r):\n    return r * r\n"),
    ContextChunk("app/units.py", "CM = 0.01"),
)
WITH_CONTEXT = dataclasses.replace(
    REQUEST, extra=CHUNKS, filename="app/main.py", repo_name="shop"
)


def test_llamacpp_sends_other_files_as_input_extra_in_order() -> None:
    _, body = provider_for(options(provider="llamacpp")).build_request(WITH_CONTEXT)
    assert body["input_extra"] == [
        {"filename": "app/shapes.py", "text": "def area(r):\n    return r * r\n"},
        {"filename": "app/units.py", "text": "CM = 0.01"},
    ]
    assert body["input_prefix"] == REQUEST.prefix  # the local window is unchanged
    _, plain = provider_for(options(provider="llamacpp")).build_request(REQUEST)
    assert "input_extra" not in plain


def test_qwen_template_puts_other_files_ahead_as_repository_tokens() -> None:
    _, body = provider_for(options(fim_template="qwen")).build_request(WITH_CONTEXT)
    assert body["prompt"] == (
        "<|repo_name|>shop\n"
        "<|file_sep|>app/shapes.py\ndef area(r):\n    return r * r\n"
        "<|file_sep|>app/units.py\nCM = 0.01\n"
        "<|file_sep|>app/main.py\n"
        "<|fim_prefix|>def add(a, b):\n    return <|fim_suffix|>\n<|fim_middle|>"
    )


def test_starcoder_template_uses_its_own_repository_tokens() -> None:
    _, body = provider_for(options(fim_template="starcoder")).build_request(WITH_CONTEXT)
    assert body["prompt"].startswith("<repo_name>shop<file_sep>app/shapes.py\ndef area(r):")
    assert "<file_sep>app/main.py\n<fim_prefix>def add" in body["prompt"]


def test_plain_completion_apis_get_other_files_as_a_leading_comment_block() -> None:
    _, body = provider_for(options()).build_request(WITH_CONTEXT)
    assert body["prompt"] == (
        "# app/shapes.py\n# def area(r):\n#     return r * r\n"
        "# app/units.py\n# CM = 0.01\n" + REQUEST.prefix
    )
    _, body = provider_for(options(fim_template="deepseek")).build_request(
        dataclasses.replace(WITH_CONTEXT, language="typescript")
    )
    assert body["prompt"].startswith("<｜fim▁begin｜>// app/shapes.py\n// def area(r):\n")


def test_llamacpp_with_a_suffix_first_template_and_spm_renders_to_completion() -> None:
    provider = provider_for(options(provider="llamacpp", fim_template="codellama", fim_order="spm"))
    url, body = provider.build_request(REQUEST)
    assert url == "https://svc.test:8443/completion"
    assert body["prompt"] == f"<PRE> <SUF>{REQUEST.suffix} <MID> {REQUEST.prefix}"
    assert "input_prefix" not in body and "<EOT>" in body["stop"]


def test_llamacpp_keeps_infill_without_spm_or_for_a_prefix_first_only_template() -> None:
    for changes in ({"fim_template": "codellama"}, {"fim_template": "qwen", "fim_order": "spm"},
                    {"fim_order": "spm"}):
        url, body = provider_for(options(provider="llamacpp", **changes)).build_request(REQUEST)
        assert url.endswith("/infill") and "prompt" not in body


async def cut_and_text(provider_name: str, raw: list[bytes]) -> tuple[bool, str]:
    provider = provider_for(options(provider=provider_name))
    chunks = [t async for t in provider.parse_stream(decode_lines(feed(raw)))]
    assert all(not is_cut(c) for c in chunks[:-1])
    return bool(chunks) and is_cut(chunks[-1]), "".join(chunks)


@pytest.mark.parametrize("reason", ["length", "stop"])
async def test_openai_finish_reason_length_marks_the_answer_cut(reason: str) -> None:
    raw = sse(
        {"choices": [{"text": "/****", "finish_reason": None}]},
        {"choices": [{"text": "****", "finish_reason": reason}]},
    ) + [b"data: [DONE]\n\n"]
    assert await cut_and_text("openai", raw) == (reason == "length", "/********")


@pytest.mark.parametrize(("stop_type", "cut"), [("limit", True), ("eos", False), ("word", False)])
async def test_llamacpp_stop_type_limit_marks_the_answer_cut(stop_type: str, cut: bool) -> None:
    # ``truncated`` is about the prompt: it never marks the answer cut
    raw = sse(
        {"content": "x", "stop": False},
        {"content": "y", "stop": True, "stop_type": stop_type, "truncated": True},
    )
    assert await cut_and_text("llamacpp", raw) == (cut, "xy")


async def test_llamacpp_stopped_limit_alone_marks_the_answer_cut() -> None:
    raw = sse({"content": "xy", "stop": True, "stopped_limit": True})
    assert await cut_and_text("llamacpp", raw) == (True, "xy")


@pytest.mark.parametrize(("reason", "cut"), [("length", True), ("stop", False)])
async def test_ollama_done_reason_length_marks_the_answer_cut(reason: str, cut: bool) -> None:
    raw = [
        b'{"response": "1", "done": false}\n',
        json.dumps({"response": "2", "done": True, "done_reason": reason}).encode() + b"\n",
    ]
    assert await cut_and_text("ollama", raw) == (cut, "12")


def test_non_streamed_bodies_tell_a_cut_answer() -> None:
    openai = provider_for(options())
    assert openai.body_cut({"choices": [{"text": "t", "finish_reason": "length"}]})
    assert not openai.body_cut({"choices": [{"text": "t", "finish_reason": "stop"}]})
    llamacpp = provider_for(options(provider="llamacpp"))
    assert llamacpp.body_cut({"content": "c", "stop_type": "limit"})
    assert not llamacpp.body_cut({"content": "c", "stop_type": "eos", "truncated": True})
    ollama = provider_for(options(provider="ollama"))
    assert ollama.body_cut({"response": "r", "done_reason": "length"})
    assert not ollama.body_cut({"response": "r", "done_reason": "stop"})

"""Identifying a service from its answers, and reading the token numbers it reports."""

from __future__ import annotations

import httpx
import pytest

from transport.backend import CompletionRequest
from transport.options import EndpointOptions
from transport.providers import (
    LlamaCppProvider,
    TokenUsage,
    llamacpp_usage,
    ollama_usage,
    openai_usage,
    provider_for,
)
from transport.service_detect import ServiceProfile, detect_service, template_for_model


def client_for(routes: dict[str, httpx.Response]) -> httpx.AsyncClient:
    def answer(request: httpx.Request) -> httpx.Response:
        return routes.get(request.url.path, httpx.Response(404, json={"error": "no route"}))

    return httpx.AsyncClient(transport=httpx.MockTransport(answer))


@pytest.mark.parametrize("endpoint", ["http://svc.test:8080", "http://svc.test:8080/v1/"])
def test_openai_path_is_v1_completions_with_or_without_v1_in_the_endpoint(endpoint: str) -> None:
    provider = provider_for(EndpointOptions(endpoint=endpoint, provider="openai"))
    url, _ = provider.build_request(CompletionRequest(prefix="a", suffix="b"))
    assert url == "http://svc.test:8080/v1/completions"


async def test_a_server_header_of_llama_cpp_means_infill_even_without_props() -> None:
    client = client_for({"/props": httpx.Response(404, headers={"server": "llama.cpp"})})
    profile = await detect_service(client, EndpointOptions(endpoint="http://svc.test/v1"))
    assert profile is not None and profile.kind == "llamacpp" and profile.path == "/infill"


async def test_ollama_is_known_by_api_version_and_lends_its_first_model() -> None:
    client = client_for({
        "/api/version": httpx.Response(200, json={"version": "0.5.1"}),
        "/api/tags": httpx.Response(200, json={"models": [{"name": "qwen2.5-coder:1.5b"}]}),
    })
    profile = await detect_service(client, EndpointOptions(endpoint="http://svc.test:11434"))
    assert profile is not None
    assert (profile.kind, profile.path, profile.model) == (
        "ollama", "/api/generate", "qwen2.5-coder:1.5b")


async def test_an_openai_server_gets_a_fim_template_from_its_models_name() -> None:
    client = client_for({"/v1/models": httpx.Response(
        200, json={"data": [{"id": "Qwen/Qwen2.5-Coder-1.5B"}]})})
    options = EndpointOptions(endpoint="http://svc.test:8000")
    profile = await detect_service(client, options)
    assert profile is not None and profile.kind == "openai" and profile.fim_template == "qwen"
    provider = provider_for(options, profile)
    _, body = provider.build_request(CompletionRequest(prefix="a", suffix="b"))
    assert body["prompt"] == "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>"
    assert "suffix" not in body and body["model"] == "Qwen/Qwen2.5-Coder-1.5B"


def test_auto_before_identification_is_the_openai_path() -> None:
    assert provider_for(EndpointOptions(endpoint="http://x.test")).name == "openai"


@pytest.mark.parametrize(("name", "template"), [
    ("deepseek-coder-6.7b-base", "deepseek"), ("bigcode/starcoder2-3b", "starcoder"),
    ("codellama:7b-code", "codellama"), ("llama-3.1-8b-instruct", ""),
])
def test_template_for_model(name: str, template: str) -> None:
    assert template_for_model(name) == template


def test_llama_cpp_timings_give_prompt_evaluated_and_kv_cache_reuse() -> None:
    usage = llamacpp_usage({"tokens_evaluated": 38, "timings": {
        "prompt_n": 1, "cache_n": 37, "predicted_n": 4}})
    assert usage is not None
    assert (usage.prompt, usage.evaluated, usage.cached, usage.generated) == (38, 1, 37, 4)


def test_openai_usage_reads_cached_tokens() -> None:
    usage = openai_usage({"usage": {"prompt_tokens": 100, "completion_tokens": 5,
                                    "prompt_tokens_details": {"cached_tokens": 64}}})
    assert usage is not None and (usage.evaluated, usage.cached) == (36, 64)


def test_ollama_counts_are_read_from_the_done_object() -> None:
    usage = ollama_usage({"done": True, "prompt_eval_count": 12, "eval_count": 7})
    assert usage is not None and (usage.prompt, usage.generated) == (12, 7)


def test_infill_prompt_stays_within_the_servers_token_limit() -> None:
    options = EndpointOptions(endpoint="http://svc.test", provider="llamacpp",
                              max_prompt_tokens=100, max_tokens=16)
    profile = ServiceProfile(kind="llamacpp", path="/infill", context_tokens=4096,
                             chars_per_token=2.0)
    provider = LlamaCppProvider(options, profile)
    prefix, suffix = provider.prompt(CompletionRequest(prefix="x = 1\n" * 500, suffix="y\n" * 500))
    assert len(prefix) + len(suffix) <= 100 * 2
    assert prefix.endswith("x = 1\n") and suffix.startswith("y\n")


def _llamacpp(max_prompt_tokens: int = 100, chars_per_token: float = 2.0) -> LlamaCppProvider:
    options = EndpointOptions(endpoint="http://svc.test", provider="llamacpp",
                              max_prompt_tokens=max_prompt_tokens, max_tokens=16)
    profile = ServiceProfile(kind="llamacpp", path="/infill", context_tokens=4096,
                             chars_per_token=chars_per_token)
    return LlamaCppProvider(options, profile)


def test_infill_prefix_keeps_to_its_three_quarters_whatever_the_suffix_leaves() -> None:
    # /infill gives the prefix three quarters of its batch and cuts the rest at
    # its start, token by token, even when the suffix is empty
    provider = _llamacpp()
    budget = int(100 * provider.HEADROOM * 2.0)
    for suffix in ("", "y\n", "y\n" * 500):
        prefix, kept = provider.prompt(CompletionRequest(prefix="x = 1\n" * 500, suffix=suffix))
        assert 0 < len(prefix) <= budget * 3 // 4
        assert prefix.endswith("x = 1\n")
        assert len(kept) <= budget - budget * 3 // 4


def test_a_suffix_first_prompt_gives_the_prefix_what_a_short_suffix_leaves() -> None:
    # /completion does not split the prompt: only /infill's split is kept to
    options = EndpointOptions(endpoint="http://svc.test", provider="llamacpp",
                              max_prompt_tokens=100, max_tokens=16, fim_order="spm",
                              fim_template="codellama")
    profile = ServiceProfile(kind="llamacpp", path="/infill", context_tokens=4096,
                             chars_per_token=2.0)
    provider = LlamaCppProvider(options, profile)
    assert provider.suffix_first
    budget = int(100 * provider.HEADROOM * 2.0)
    prefix, _ = provider.prompt(CompletionRequest(prefix="x = 1\n" * 500, suffix=""))
    assert budget * 3 // 4 < len(prefix) <= budget


def test_a_rate_the_server_counts_clearly_lower_sizes_the_next_prompts() -> None:
    provider = _llamacpp(chars_per_token=4.0)
    body = {"input_prefix": "a" * 900, "input_suffix": "b" * 100}
    provider.observe(body, TokenUsage(prompt=250))  # 4.0 as measured: nothing learnt
    assert provider.chars_per_token() == 4.0
    provider.observe(body, TokenUsage(prompt=400))  # 2.5: clearly lower
    assert provider.chars_per_token() == 2.5
    provider.observe(body, TokenUsage(prompt=420))  # within a tenth of it: kept
    assert provider.chars_per_token() == 2.5
    extra = {**body, "input_extra": [{"filename": "b.py", "text": "c" * 50}]}
    provider.observe(extra, TokenUsage(prompt=900))  # other files' tokens count elsewhere
    assert provider.chars_per_token() == 2.5
    prefix, _ = provider.prompt(CompletionRequest(prefix="x = 1\n" * 500, suffix=""))
    assert len(prefix) <= int(100 * provider.HEADROOM * 2.5) * 3 // 4


@pytest.mark.parametrize("fim_order", ["psm", "spm"])
def test_a_prefix_within_the_prefix_budget_is_sent_whole_and_a_longer_one_is_cut(
    fim_order: str,
) -> None:
    # the prompt window sizes itself to prefix_budget() so that its start is kept
    options = EndpointOptions(endpoint="http://svc.test", provider="llamacpp",
                              max_prompt_tokens=300, max_tokens=16, fim_order=fim_order,
                              fim_template="codellama")
    profile = ServiceProfile(kind="llamacpp", path="/infill", context_tokens=4096,
                             chars_per_token=2.0)
    provider = LlamaCppProvider(options, profile)
    budget = provider.prefix_budget()
    assert budget == int(int(300 * provider.HEADROOM * 2.0) * provider.PREFIX_SHARE)
    line = "value = compute(1)\n"
    fitting = "x" * (budget % len(line)) + line * (budget // len(line))
    assert len(fitting) == budget
    for suffix in ("", "y\n" * 500):
        prefix, _ = provider.prompt(CompletionRequest(prefix=fitting, suffix=suffix))
        assert prefix == fitting
    # a longer one is cut at its start (a suffix-first prompt's only when the suffix is long)
    prefix, _ = provider.prompt(CompletionRequest(prefix=line + fitting, suffix="y\n" * 500))
    assert prefix != line + fitting and prefix.endswith(fitting[-len(line):])


def test_the_prefix_budget_of_other_services_is_the_settings_one() -> None:
    provider = provider_for(EndpointOptions(endpoint="http://svc.test", provider="ollama",
                                            model="m", prefix_chars=1234))
    assert provider.prefix_budget() == 1234


def test_ollama_request_carries_keep_alive() -> None:
    provider = provider_for(EndpointOptions(endpoint="http://svc.test", provider="ollama",
                                            model="m", keep_alive="30m"))
    _, body = provider.build_request(CompletionRequest(prefix="a", suffix="b"))
    assert body["keep_alive"] == "30m" and body["suffix"] == "b"

from __future__ import annotations

from lsp_server.diagnose.prompt_cache import (
    PromptTokens,
    judge,
    keystroke_pair,
    prompt_tokens,
)
from lsp_server.diagnose.sample import PromptSample


def test_llamacpp_timings_give_evaluated_of_read() -> None:
    body = {"content": "x", "tokens_evaluated": 1200, "timings": {"prompt_n": 7, "cache_n": 1193}}
    assert prompt_tokens(body) == PromptTokens(read=1200, evaluated=7)
    assert prompt_tokens({"timings": {"prompt_n": 7, "cache_n": 3}}) == PromptTokens(10, 7)


def test_openai_usage_gives_evaluated_as_prompt_less_cached() -> None:
    body = {"usage": {"prompt_tokens": 900, "prompt_tokens_details": {"cached_tokens": 896}}}
    assert prompt_tokens(body) == PromptTokens(read=900, evaluated=4)
    assert prompt_tokens({"usage": {"prompt_tokens": 900}}) == PromptTokens(900, None)


def test_ollama_reports_only_what_it_evaluated() -> None:
    assert prompt_tokens({"response": "", "prompt_eval_count": 12}) == PromptTokens(None, 12)


def test_a_small_re_evaluation_is_ok() -> None:
    line = judge("llamacpp", PromptTokens(1200, 1200), PromptTokens(1201, 8))
    assert (line.name, line.value, line.verdict) == ("server prompt cache", 8, "ok")
    assert line.hint is not None and "8 of 1201" in line.hint


def test_re_evaluating_the_whole_prompt_names_the_server_flag() -> None:
    line = judge("llamacpp", PromptTokens(1200, 1200), PromptTokens(1201, 1201))
    assert line.verdict == "slow"
    assert line.hint is not None and "--cache-reuse 256" in line.hint
    vllm = judge("openai", PromptTokens(900, 900), PromptTokens(901, 901))
    assert vllm.hint is not None and "--enable-prefix-caching" in vllm.hint


def test_ollama_is_judged_against_its_first_request() -> None:
    line = judge("ollama", PromptTokens(None, 800), PromptTokens(None, 790))
    assert line.verdict == "slow"
    assert line.hint is not None and "keep_alive" in line.hint


def test_a_service_without_numbers_is_skipped_with_the_reason() -> None:
    line = judge("openai", PromptTokens(900, None), PromptTokens(900, None))
    assert line.verdict == "skipped"
    assert line.hint is not None and "reports no" in line.hint


def test_the_keystroke_pair_shares_everything_up_to_the_cursor() -> None:
    prefix = "".join(f"line number {n}\n" for n in range(400)) + "    total = comp"
    sample = PromptSample(prefix=prefix, suffix="ute()\nreturn total\n", language="python",
                          origin="test")
    first, second = keystroke_pair(sample, 1000)
    assert second.prefix == first.prefix + "u"
    assert second.suffix == "te()\nreturn total\n"
    assert len(second.prefix) <= 1000
    assert first.prefix.startswith("line number")  # a whole line
    assert prefix.endswith(first.prefix)

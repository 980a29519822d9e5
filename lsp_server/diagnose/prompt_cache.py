"""``scopecache diagnose``, server prompt cache: is the KV cache reused between keystrokes.

Two non-streamed requests a keystroke apart: the sample's prompt, then the
same prompt with one more character typed at the cursor. The prefix starts
at a line that fits the budget with room to spare, as the server's anchored
prompt window does (``lsp_server.documents.prompt_window``), so the two prompts share
everything up to the cursor. How many prompt tokens the second one
re-evaluated is read from what the service reports: llama.cpp's ``timings``
(``prompt_n`` evaluated of ``tokens_evaluated`` read), OpenAI's ``usage``
(``prompt_tokens`` less ``prompt_tokens_details.cached_tokens``), Ollama's
``prompt_eval_count`` (against the first request's).

A service that re-evaluates more than a fifth of the prompt pays a prefill
per keystroke for nothing; the hint names the flag that helps.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from lsp_server.diagnose.report import Measurement, Verdict, failing, skipped
from lsp_server.diagnose.sample import PromptSample
from lsp_server.diagnose.service import ServiceProbe
from transport import errors

NAME = "server prompt cache"
#: share of the prompt re-evaluated above which the reuse is judged slow
SLOW_SHARE = 0.2
#: characters of room left in the prefix budget, so one more keeps the start
ROOM = 64

HINTS = {
    "llamacpp": "start llama-server with --cache-reuse 256 (and keep cache_prompt, the default)",
    "ollama": "keep the model loaded between requests (Ollama keep_alive); Ollama reuses the "
    "prompt of a loaded model",
    "openai": "vLLM: start it with --enable-prefix-caching; llama.cpp: --cache-reuse 256",
}


@dataclass(frozen=True)
class PromptTokens:
    """Prompt tokens of one answer: how many were read and how many evaluated."""

    read: int | None
    evaluated: int | None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def prompt_tokens(body: Any) -> PromptTokens:
    """The prompt token numbers of a non-streamed answer, whatever the service."""
    if not isinstance(body, dict):
        return PromptTokens(None, None)
    timings = body.get("timings")
    if isinstance(timings, dict) and _int(timings.get("prompt_n")) is not None:
        evaluated = _int(timings.get("prompt_n"))
        read = _int(body.get("tokens_evaluated"))
        cached = _int(timings.get("cache_n"))
        if read is None and evaluated is not None and cached is not None:
            read = evaluated + cached
        usage = body.get("usage")
        if read is None and isinstance(usage, dict):
            read = _int(usage.get("prompt_tokens"))
        return PromptTokens(read, evaluated)
    if "prompt_eval_count" in body:
        return PromptTokens(None, _int(body.get("prompt_eval_count")))
    usage = body.get("usage")
    if isinstance(usage, dict):
        read = _int(usage.get("prompt_tokens"))
        details = usage.get("prompt_tokens_details")
        cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else None
        if read is not None and cached is not None:
            return PromptTokens(read, read - cached)
        return PromptTokens(read, None)
    return PromptTokens(None, None)


def keystroke_pair(sample: PromptSample, prefix_chars: int) -> tuple[PromptSample, PromptSample]:
    """The sample with a line-aligned prefix, and the same one keystroke later."""
    prefix = sample.prefix
    budget = max(0, prefix_chars - ROOM)
    if len(prefix) > budget:
        kept = prefix[len(prefix) - budget :]
        newline = kept.find("\n")
        prefix = kept[newline + 1 :] if 0 <= newline < len(kept) - 1 else kept
    typed = sample.suffix[:1] if sample.suffix[:1] not in ("", "\n") else "x"
    first = replace(sample, prefix=prefix)
    second = replace(sample, prefix=prefix + typed, suffix=sample.suffix[len(typed) :]
                     if sample.suffix.startswith(typed) else sample.suffix)
    return first, second


def judge(provider: str, first: PromptTokens, second: PromptTokens) -> Measurement:
    """The report line for the second request's numbers."""
    hint = HINTS.get(provider, HINTS["openai"])
    evaluated = second.evaluated
    if evaluated is None:
        return skipped(NAME, "the service reports no evaluated or cached prompt tokens; "
                       f"{hint}")
    read = second.read if second.read else first.evaluated
    if not read:
        return Measurement(NAME, evaluated, "tokens", None, "ok",
                           "re-evaluated by the second of two requests a keystroke apart")
    share = evaluated / read
    verdict: Verdict = "ok" if share <= SLOW_SHARE else "slow"
    text = (f"the second of two requests a keystroke apart re-evaluated {evaluated} of "
            f"{read} prompt tokens ({share:.0%})")
    return Measurement(
        NAME,
        evaluated,
        "tokens",
        f"<= {SLOW_SHARE:.0%} of {read}",
        verdict,
        text if verdict == "ok" else f"{text}: {hint}",
    )


async def diagnose_prompt_cache(probe: ServiceProbe, sample: PromptSample) -> Measurement:
    """Send two requests a keystroke apart through ``probe`` and judge the reuse."""
    first, second = keystroke_pair(sample, probe.options.prefix_chars)
    try:
        numbers = [prompt_tokens(await probe.post_json(s)) for s in (first, second)]
    except errors.TransportError as exc:
        return failing(NAME, f"the keystroke pair failed: {exc}")
    return judge(probe.provider_name, numbers[0], numbers[1])

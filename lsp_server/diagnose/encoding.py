"""``scopecache diagnose``, encoding layer: characters vs tokens, inflation, window use.

The sample prompt is fitted to ``completion.prefixChars``/``suffixChars``
exactly as the transport fits it, and its characters are set against the
tokens the service counted for it. The inflation ratio is
``prompt tokens / (prompt characters / 4)``: how many times more tokens the
prompt costs than the four-characters-per-token rule that prompt budgets
assume (1.0x: exactly four characters per token; the seed's health
threshold for Python is under 1.8x).
"""

from __future__ import annotations

from lsp_server.diagnose.report import Limit, Measurement, info, judged, skipped
from lsp_server.diagnose.sample import PromptSample
from transport.options import EndpointOptions
from transport.prompt import fit_prompt

#: the seed's threshold for Python: under 1.8x the 4-chars-per-token budget
INFLATION_LIMIT = Limit(1.8, unit="x")
CHARS_PER_TOKEN_BUDGET = 4.0


def encoding_measurements(
    options: EndpointOptions, sample: PromptSample, tokens: int | None
) -> list[Measurement]:
    """Characters, tokens, inflation and window use of the fitted sample prompt."""
    prefix, suffix = fit_prompt(sample.prefix, sample.suffix, options.prefix_chars,
                                options.suffix_chars)
    chars = len(prefix) + len(suffix)
    out = [info("prompt characters", chars, "chars", hint=f"sample: {sample.origin}")]
    if tokens is None or tokens <= 0:
        why = ("the service does not report prompt tokens in non-streaming answers "
               "(usage.prompt_tokens), so its encoding cannot be measured")
        out += [skipped("prompt tokens", why), skipped("token inflation", why)]
    else:
        ratio = tokens / (chars / CHARS_PER_TOKEN_BUDGET) if chars else 0.0
        out.append(info("prompt tokens", tokens, "tokens",
                        hint=f"{chars / tokens:.2f} characters per token"))
        out.append(judged("token inflation", ratio, INFLATION_LIMIT,
                          f"{sample.language} costs {ratio:.2f}x the tokens a 4-chars-per-token "
                          "budget assumes: the prompt window fills the model's context and "
                          "prefill time faster; lower completion.prefixChars"))
    for side, used, budget in (("prefix", len(prefix), options.prefix_chars),
                               ("suffix", len(suffix), options.suffix_chars)):
        share = 100.0 * used / budget if budget else 0.0
        out.append(info(f"{side} window used", share, "%",
                        hint=f"{used} of completion.{side}Chars = {budget}"))
    if tokens:
        window = (options.prefix_chars + options.suffix_chars) * tokens / max(chars, 1)
        out.append(info("full window", round(window), "tokens",
                        hint="prefixChars + suffixChars at the measured characters per token"))
    return out

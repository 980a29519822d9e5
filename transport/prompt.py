"""The fill-in-the-middle prompt: fitted to a budget, rendered for a model family.

``fit_prompt`` keeps the text nearest the cursor: the prefix is cut from its
start, the suffix from its end, at line boundaries where that is possible
without losing more than a line. The budget is ``prefix_chars +
suffix_chars``; a side that needs less than its share leaves the rest to the
other side.

``render_fim`` writes prefix and suffix into the explicit FIM tokens of
StarCoder, Qwen2.5-Coder, DeepSeek-Coder or CodeLlama models, for
OpenAI-compatible servers that take a plain prompt (no ``suffix`` field).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FimTemplate:
    """The tokens one model family uses around the hole, and where it stops."""

    begin: str
    hole: str
    end: str
    stop: tuple[str, ...]

    def render(self, prefix: str, suffix: str) -> str:
        """The prompt asking for the text between ``prefix`` and ``suffix``."""
        return f"{self.begin}{prefix}{self.hole}{suffix}{self.end}"


FIM_TEMPLATES: dict[str, FimTemplate] = {
    "starcoder": FimTemplate(
        "<fim_prefix>", "<fim_suffix>", "<fim_middle>", ("<|endoftext|>", "<file_sep>")
    ),
    "qwen": FimTemplate(
        "<|fim_prefix|>",
        "<|fim_suffix|>",
        "<|fim_middle|>",
        ("<|endoftext|>", "<|fim_pad|>", "<|file_sep|>"),
    ),
    "deepseek": FimTemplate(
        "<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>", ("<｜end▁of▁sentence｜>",)
    ),
    "codellama": FimTemplate("<PRE> ", " <SUF>", " <MID>", ("<EOT>",)),
}


def render_fim(template: str, prefix: str, suffix: str) -> str:
    """Render with the named template (``starcoder``, ``qwen``, ``deepseek``, ``codellama``)."""
    return FIM_TEMPLATES[template].render(prefix, suffix)


def _cut_prefix(prefix: str, budget: int) -> str:
    if len(prefix) <= budget:
        return prefix
    if budget <= 0:
        return ""
    kept = prefix[len(prefix) - budget :]
    if prefix[len(prefix) - budget - 1] == "\n":
        return kept
    newline = kept.find("\n")
    # Drop the partial first line, unless that would drop everything.
    return kept[newline + 1 :] if 0 <= newline < len(kept) - 1 else kept


def _cut_suffix(suffix: str, budget: int) -> str:
    if len(suffix) <= budget:
        return suffix
    if budget <= 0:
        return ""
    kept = suffix[:budget]
    if suffix[budget] == "\n":
        return kept
    newline = kept.rfind("\n")
    return kept[: newline + 1] if newline > 0 else kept


def fit_prompt(prefix: str, suffix: str, prefix_chars: int, suffix_chars: int) -> tuple[str, str]:
    """Cut ``prefix`` and ``suffix`` to fit ``prefix_chars + suffix_chars`` characters."""
    total = max(0, prefix_chars) + max(0, suffix_chars)
    suffix_budget = min(len(suffix), max(0, suffix_chars), total)
    prefix_budget = total - suffix_budget
    if len(prefix) < prefix_budget:
        # The prefix is short: the suffix may use what it leaves.
        suffix_budget = total - len(prefix)
    return _cut_prefix(prefix, prefix_budget), _cut_suffix(suffix, suffix_budget)

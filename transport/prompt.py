"""The fill-in-the-middle prompt: fitted to a budget, rendered for a model family.

``fit_prompt`` keeps the text nearest the cursor: the prefix is cut from its
start, in steps of an eighth of its budget (so that a prefix growing at its
end keeps its first line for a while), the suffix from its end, at line
boundaries where that is possible. The budget is ``prefix_chars +
suffix_chars``; a side that needs less than its share leaves the rest to the
other side.

``render_fim`` writes prefix and suffix into the explicit FIM tokens of
StarCoder, Qwen2.5-Coder, DeepSeek-Coder or CodeLlama models, for
OpenAI-compatible servers that take a plain prompt (no ``suffix`` field). The
StarCoder and CodeLlama families were also trained suffix-first (SPM), which
``completion.fimOrder = "spm"`` selects: the suffix changes least while the
user types, so a server's KV cache then reuses all of the prompt but its end.

Cross-file context (``ContextChunk``) goes ahead of everything else, in the
order given, so that it stays in a server's KV cache while the local window
changes: as the repository-level tokens of the StarCoder2 and Qwen2.5-Coder
templates (``<repo_name>``/``<file_sep>``, ``<|repo_name|>``/``<|file_sep|>``),
else as a leading comment block (``comment_block``). llama.cpp's ``/infill``
takes the chunks as ``input_extra`` instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from transport.backend import ContextChunk

#: a prefix longer than its budget loses a whole number of budget/CUT_STEPS
#: characters from its start
CUT_STEPS = 8
#: the project name the repository-level templates get when none is known
DEFAULT_REPO_NAME = "project"

# Line comments of the languages whose comment is not "//".
_LINE_COMMENTS = {
    "python": "#", "ruby": "#", "bash": "#", "shell": "#", "shellscript": "#",
    "perl": "#", "r": "#", "toml": "#", "yaml": "#", "elixir": "#", "julia": "#",
    "lua": "--", "sql": "--", "haskell": "--", "elm": "--", "ada": "--",
    "lisp": ";", "clojure": ";", "scheme": ";", "erlang": "%", "latex": "%",
}


@dataclass(frozen=True)
class FimTemplate:
    """The tokens one model family uses around the hole, and where it stops."""

    begin: str
    hole: str
    end: str
    stop: tuple[str, ...]
    #: repository-level tokens (before the project's name, before each file's path)
    repo: str = ""
    file_sep: str = ""
    #: a newline after the project's name (Qwen2.5-Coder), none (StarCoder2)
    repo_newline: bool = False
    #: the suffix-first (SPM) layout the family was trained with, as the text
    #: before the suffix and the text between suffix and prefix (None: PSM only)
    spm: tuple[str, str] | None = None

    def render(self, prefix: str, suffix: str, *, suffix_first: bool = False) -> str:
        """The prompt asking for the text between ``prefix`` and ``suffix``.

        ``suffix_first`` (SPM) puts the suffix ahead of the prefix, where the
        family supports it: the suffix does not change while the user types
        at the end of a line, so the whole prompt then only grows at its end.
        """
        if suffix_first and self.spm is not None:
            return f"{self.spm[0]}{suffix}{self.spm[1]}{prefix}"
        return f"{self.begin}{prefix}{self.hole}{suffix}{self.end}"

    def render_repo(
        self,
        prefix: str,
        suffix: str,
        extra: Sequence[ContextChunk],
        *,
        filename: str,
        repo_name: str,
        language: str = "",
        suffix_first: bool = False,
    ) -> str:
        """The prompt with other files' chunks ahead of it, in the given order."""
        if not extra:
            return self.render(prefix, suffix, suffix_first=suffix_first)
        if not self.repo:
            # comments ahead of everything, outside the FIM tokens
            if suffix_first and self.spm is not None:
                return comment_block(extra, language) + self.render(
                    prefix, suffix, suffix_first=True
                )
            return self.render(comment_block(extra, language) + prefix, suffix)
        head = [self.repo, repo_name or DEFAULT_REPO_NAME, "\n" if self.repo_newline else ""]
        for chunk in extra:
            text = chunk.text if chunk.text.endswith("\n") else chunk.text + "\n"
            head += [self.file_sep, chunk.filename, "\n", text]
        head += [self.file_sep, filename or "current", "\n"]
        return "".join(head) + self.render(prefix, suffix, suffix_first=suffix_first)


FIM_TEMPLATES: dict[str, FimTemplate] = {
    "starcoder": FimTemplate(
        "<fim_prefix>",
        "<fim_suffix>",
        "<fim_middle>",
        ("<|endoftext|>", "<file_sep>"),
        repo="<repo_name>",
        file_sep="<file_sep>",
        spm=("<fim_prefix><fim_suffix>", "<fim_middle>"),
    ),
    "qwen": FimTemplate(
        "<|fim_prefix|>",
        "<|fim_suffix|>",
        "<|fim_middle|>",
        ("<|endoftext|>", "<|fim_pad|>", "<|file_sep|>"),
        repo="<|repo_name|>",
        file_sep="<|file_sep|>",
        repo_newline=True,
    ),
    "deepseek": FimTemplate(
        "<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>", ("<｜end▁of▁sentence｜>",)
    ),
    "codellama": FimTemplate(
        "<PRE> ", " <SUF>", " <MID>", ("<EOT>",), spm=("<PRE> <SUF>", " <MID> ")
    ),
}


def render_fim(
    template: str,
    prefix: str,
    suffix: str,
    extra: Sequence[ContextChunk] = (),
    *,
    filename: str = "",
    repo_name: str = "",
    language: str = "",
    suffix_first: bool = False,
) -> str:
    """Render with the named template (``starcoder``, ``qwen``, ``deepseek``, ``codellama``)."""
    return FIM_TEMPLATES[template].render_repo(
        prefix,
        suffix,
        extra,
        filename=filename,
        repo_name=repo_name,
        language=language,
        suffix_first=suffix_first,
    )


def comment_block(extra: Sequence[ContextChunk], language: str) -> str:
    """Other files' chunks as line comments, for prompts without file tokens."""
    mark = _LINE_COMMENTS.get(language.lower(), "//")
    lines: list[str] = []
    for chunk in extra:
        lines.append(f"{mark} {chunk.filename}")
        lines += [f"{mark} {line}".rstrip() for line in chunk.text.splitlines()]
    return "".join(f"{line}\n" for line in lines)


def _cut_prefix(prefix: str, budget: int) -> str:
    if len(prefix) <= budget:
        return prefix
    if budget <= 0:
        return ""
    # Drop a whole number of steps from the start, so that while the prefix
    # grows at its end the cut stays put for a step's worth of typing (a
    # server's KV cache reuses everything ahead of the cursor), then move on
    # to the next line start.
    step = max(1, budget // CUT_STEPS)
    drop = -(-(len(prefix) - budget) // step) * step
    if drop < len(prefix) and prefix[drop - 1] == "\n":
        return prefix[drop:]
    newline = prefix.find("\n", drop, len(prefix) - 1)
    if newline < 0:
        # No line start left: the last characters, rather than nothing.
        return prefix[len(prefix) - budget :]
    return prefix[newline + 1 :]


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


def fit_prompt(
    prefix: str, suffix: str, prefix_chars: int, suffix_chars: int, *, pooled: bool = True
) -> tuple[str, str]:
    """Cut ``prefix`` and ``suffix`` to fit ``prefix_chars + suffix_chars`` characters.

    ``pooled``: a side shorter than its share leaves the rest to the other
    side; otherwise each side is cut to its own share (a server that splits
    its own budget that way would cut whatever went beyond it).
    """
    if not pooled:
        return _cut_prefix(prefix, max(0, prefix_chars)), _cut_suffix(suffix, max(0, suffix_chars))
    total = max(0, prefix_chars) + max(0, suffix_chars)
    suffix_budget = min(len(suffix), max(0, suffix_chars), total)
    prefix_budget = total - suffix_budget
    if len(prefix) < prefix_budget:
        # The prefix is short: the suffix may use what it leaves.
        suffix_budget = total - len(prefix)
    return _cut_prefix(prefix, prefix_budget), _cut_suffix(suffix, suffix_budget)

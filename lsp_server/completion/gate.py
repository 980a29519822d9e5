"""What of a suggestion is worth showing: the model's confidence and cheap rejects.

A suggestion on screen that the developer does not want costs attention
(DESIGN.md, "Save typing, show less that is wrong"). Every suggestion, from
memory or fresh, passes ``gate`` before it goes out:

1. the model's confidence, where the service reported token probabilities
   (``cache.entry.Confidence``): the suggestion is cut where the first token
   below the bar starts (its first token against ``min_probability``, the
   rest against the higher ``min_onward_probability``: a likely start that
   goes on where the model hesitates is mostly wrong past that point); in a
   block, after the first line, at the end of the last line before the
   unsure one (a ghost of whole lines). A first line cut inside a string
   literal it opened ends before that string (``before_open_string``), read
   by the language's rules (``Surroundings.strings``, from its
   ``LanguageSpec``) from the start of the cursor's line. Cut to nothing
   (its start is unsure), it is held back as ``unsure``;
2. cheap rejects, which need no model: the part that repeats the text after
   the cursor on its line is trimmed; a suggestion whose line, once written,
   repeats the next line below or the line above, or a block line that
   repeats the next line or the line before it, is cut there (``repeat``);
   what is left only whitespace or closing brackets the editor closes by
   itself is held back (``whitespace``).

Held-back reasons are camelCase, as ``scopecache/stats`` reports them in
``heldBack``: ``unsure``, ``lowKept`` (the source or scope is kept too
little: the acceptance ledger's verdict, applied by the pipeline),
``repeat``, ``whitespace``.

The bar is the one seam for what this developer kept: the pipeline asks a
``BarSource`` for the ``ShowBar`` of each suggestion, by language, scope
kind and source, and the default source returns the configured bar
(``completion.confidence``). An adjustment learnt from the acceptance ledger
plugs in there, as a function wrapping the default: raise
``min_probability`` where little is kept, lower it where much is. Nothing
else of the decision needs to change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from cache.entry import Confidence
from lsp_server.completion.bounds import MAX_SUGGESTION_LINES
from lsp_server.documents.languages import STRING_SYNTAX
from lsp_server.documents.languages.strings import (
    DEFAULT_STRINGS,
    StringSyntax,
    open_string,
    word_start,
)
from lsp_server.settings import CompletionSettings

#: why a suggestion was held back, as ``scopecache/stats`` names them
UNSURE = "unsure"
LOW_KEPT = "lowKept"
REPEAT = "repeat"
WHITESPACE = "whitespace"
HELD_BACK_REASONS = (UNSURE, LOW_KEPT, REPEAT, WHITESPACE)

#: characters an editor closes by itself, and separators that add nothing alone
_CLOSERS = ")]}>\"'`;,"
#: ``str.translate`` table that deletes them (what is left must be whitespace)
_DROP_CLOSERS = str.maketrans("", "", _CLOSERS)


@dataclass(frozen=True, slots=True)
class ShowBar:
    """How sure the model must be for its text to be shown."""

    #: a token less probable than this ends what is shown (0: no cut)
    min_probability: float = 0.0
    #: past the suggestion's first token, the bar is at least this: a
    #: suggestion whose start is likely runs on only where the model stays sure
    min_onward_probability: float = 0.0
    #: the most lines one ghost shows
    max_lines: int = 8


#: the bar for a suggestion: (language, scope kind, source) -> ShowBar
BarSource = Callable[[str, str, str], ShowBar]


def configured_bar(completion: CompletionSettings) -> ShowBar:
    """The bar ``completion`` sets (no cut when ``confidence`` is off)."""
    if not completion.confidence:
        return ShowBar(max_lines=MAX_SUGGESTION_LINES)
    return ShowBar(
        completion.min_probability, completion.min_onward_probability, MAX_SUGGESTION_LINES
    )


def fixed_bar(bar: ShowBar) -> BarSource:
    """A ``BarSource`` that answers ``bar`` everywhere (the configured default)."""

    def source(_language: str, _scope: str, _source: str) -> ShowBar:
        return bar

    return source


class Verdict(NamedTuple):
    """What to show ("" when nothing) and, when nothing, why."""

    text: str
    held_back: str | None = None


class Surroundings(NamedTuple):
    """The text around the cursor a suggestion must not repeat."""

    line_prefix: str
    line_suffix: str
    #: the first non-blank line below the cursor's, stripped ("" if none)
    next_line: str = ""
    #: the last non-blank line above the cursor's, stripped ("" if none)
    line_above: str = ""
    #: the document language's string literals (``LanguageSpec.strings``), for
    #: the trim of a string the cut leaves open
    strings: StringSyntax = DEFAULT_STRINGS


def strings_of(language: str) -> StringSyntax:
    """The string syntax of a shipped ``language`` (a canonical name or lower-case languageId).

    For what knows only a language's name (the kit scoring recorded answers);
    the serving path reads the document's own (``SyntaxContext.strings``),
    which covers an embedder's languages too. Unknown: ``DEFAULT_STRINGS``.
    """
    return STRING_SYNTAX.get(language, DEFAULT_STRINGS)


def next_line_of(suffix: str) -> str:
    """The first non-blank line after the cursor's line in ``suffix``, stripped."""
    start = suffix.find("\n")
    while start >= 0:
        end = suffix.find("\n", start + 1)
        line = suffix[start + 1 : end if end >= 0 else len(suffix)].strip()
        if line:
            return line
        start = end
    return ""


def line_above_of(context: str) -> str:
    """The last non-blank line of ``context`` (the text before the cursor's line), stripped."""
    end = len(context)
    while end > 0:
        start = context.rfind("\n", 0, end - 1) + 1
        line = context[start:end].strip()
        if line:
            return line
        end = start - 1 if start > 0 else 0
    return ""


def without_line_suffix(first_line: str, line_suffix: str) -> str:
    """``first_line`` without the text after the cursor it ends with (already in the buffer)."""
    tail = line_suffix.rstrip()
    if tail and first_line.endswith(tail):
        return first_line[: len(first_line) - len(tail)]
    return first_line


def only_closers(text: str) -> bool:
    """Nothing but whitespace and closing brackets, quotes or separators."""
    # one pass in C: a check per character in Python ran on every hit
    return not text.translate(_DROP_CLOSERS).strip()


def gate(
    text: str,
    confidence: Confidence | None,
    bar: ShowBar,
    around: Surroundings,
) -> Verdict:
    """The part of ``text`` worth showing at a cursor with ``around`` it."""
    if not text:
        return Verdict("")
    if confidence is not None and bar.min_probability > 0.0:
        sure = confidence.sure_length(bar.min_probability, onward=bar.min_onward_probability)
        if sure is not None and sure < len(text):
            text = _whole_lines(text, sure, around)
            if not text.strip():
                return Verdict("", UNSURE)
    return _cheap_rejects(text, bar.max_lines, around)


def _whole_lines(text: str, sure: int, around: Surroundings) -> str:
    """``text`` cut at ``sure``; past its first line, at the end of the last sure line."""
    first_end = text.find("\n")
    if first_end < 0 or sure <= first_end:
        return before_open_string(text[:sure], around.strings, around.line_prefix)
    return text[: text.rfind("\n", 0, sure + 1)]


def before_open_string(
    cut: str, strings: StringSyntax = DEFAULT_STRINGS, line_prefix: str = ""
) -> str:
    """``cut`` without a string it opens and leaves open, with the argument that string starts.

    A suggestion cut where the model became unsure of a string's contents
    ends in a fragment (``type=int, help="``) that is rarely what is typed:
    it is trimmed to before the string, its keyword and its separator
    (``type=int``). Measured on the real model's answers, this shows fewer
    wrong suggestions and saves more characters (``docs/cache.md``).

    The line is read by its language's rules (``strings``: which quotes open
    a string, after which prefixes; a Rust lifetime opens none), from the
    start of ``line_prefix`` (the line before the cursor): a string the
    developer left open there is closed by the suggestion's first quote, and
    what the suggestion writes inside it is kept; in a comment nothing is
    trimmed.
    """
    offset = len(line_prefix)
    quote, start = open_string(line_prefix + cut if offset else cut, strings)
    if quote < offset:
        return cut  # no string left open, or the developer's own (or a comment)
    head = cut[: max(start - offset, 0)].rstrip()
    for separator in strings.separators:
        if head.endswith(separator):
            # a keyword argument (``help="``, ``name: "``) goes with its string
            end = len(head) - len(separator)
            word = word_start(head, end, strings.keyword_chars)
            if word < end:
                head = head[:word].rstrip()
            break
    if head.endswith(","):
        head = head[:-1]
    return head.rstrip()


def _cheap_rejects(text: str, max_lines: int, around: Surroundings) -> Verdict:
    lines = text.split("\n", max_lines)[:max_lines]
    first = without_line_suffix(lines[0], around.line_suffix)
    if first != lines[0] and not first.strip() and len(lines) == 1:
        return Verdict("", REPEAT)  # all of it is the rest of the line, already there
    lines[0] = first
    if first.strip() and not only_closers(first):
        written = (around.line_prefix + first).strip()
        if written == around.next_line or written == around.line_above:
            return Verdict("", REPEAT)  # the line, once written, is already there
    kept = 1
    for index in range(1, len(lines)):
        line = lines[index].strip()
        if line and (line == around.next_line or line == lines[index - 1].strip()):
            break  # caught up with the text below, or looping
        kept += 1
    shown = "\n".join(lines[:kept])
    if len(lines) > 1:
        shown = shown.rstrip()
    if kept < len(lines) and not shown.strip():
        return Verdict("", REPEAT)
    if not shown.strip() or only_closers(shown):
        return Verdict("", WHITESPACE)
    return Verdict(shown)

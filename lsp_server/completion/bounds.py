"""Where an answer being streamed ends, whatever the model would go on to write.

A small code model asked to fill a gap often never says it is done: Qwen's
``/infill`` runs every answer to the token limit, and a one-line gap gets
whole new functions. Each token costs the service time that, on a CPU, the
developer waits for. The service is told the bounds it understands (a
newline stop for a one-line request, ``n_predict``/``max_tokens``,
llama.cpp's ``t_max_predict_ms`` and ``n_indent``); ``AnswerBounds`` applies
the same rules to the text as it streams in, so that every provider stops
in the same places:

* a one-line request (anything but a block opener) ends at its first line;
* a block ends after ``MAX_SUGGESTION_LINES`` lines, before a line that
  leaves the block (indented less than the cursor's line, or as much but
  not a closing bracket), and before a line that repeats the next line after
  the cursor (the model has caught up with the text that is already there);
* once the first line is complete, a block stops growing after
  ``completion.maxGenerationMs`` of generation (cut at the last line end);
* where the service reports token probabilities (``bar`` above 0), a block
  ends before its first line past the first with a token below the bar (the
  answer's first token against ``bar``, the rest against ``onward``, as the
  gate judges them): that line would not be shown (``completion.gate``), so
  it is not generated;
* a one-line place may *run on* (``run_on``: the service reports
  probabilities, ``completion.runOn``): its answer goes on past the first
  line while the model is sure, within the same line and time limits,
  through lines at the cursor line's indentation or deeper, and ends before
  the first line with an unsure token (or one the service did not score).
  Only the first line is shown there; the lines after it go to the cache,
  so typing on through them is served from memory.

A cut at a natural boundary is the model's answer; a cut by time or length
is marked truncated, so the cache never takes it for "the model ended here".
"""

from __future__ import annotations

from dataclasses import dataclass

from cache.entry import token_bar

#: the longest suggestion shown, in lines
MAX_SUGGESTION_LINES = 8

#: a line made only of these closes the block it is in
_CLOSERS = frozenset("})]>;,")
_CLOSING_WORDS = ("end", "fi", "done", "esac", "endif", "endfor", "endwhile")


def indent_width(line: str) -> int:
    """Characters of leading whitespace."""
    return len(line) - len(line.lstrip(" \t"))


def _closes_block(stripped: str) -> bool:
    return bool(stripped) and (
        all(char in _CLOSERS for char in stripped) or stripped.rstrip(";") in _CLOSING_WORDS
    )


@dataclass(frozen=True, slots=True)
class Cut:
    """Keep ``length`` characters of the answer and stop reading it."""

    length: int
    #: cut by a limit (time, lines) rather than at the model's own boundary
    truncated: bool


@dataclass(frozen=True, slots=True)
class AnswerBounds:
    """The rules one request's answer is streamed under."""

    #: several lines are wanted (a block opener); otherwise one line
    multiline: bool
    #: the cursor line's indentation, in characters
    indent: int = 0
    #: the first non-blank line after the cursor's line, stripped ("" if none)
    next_line: str = ""
    #: generation time allowed once the first line is complete (0: no limit)
    max_generation_s: float = 0.0
    #: past the first line, a line with a token less probable than this ends the answer
    bar: float = 0.0
    #: the bar past the answer's first token (``ShowBar.min_onward_probability``)
    onward: float = 0.0
    #: a one-line place whose answer runs on past its first line while the model is sure
    run_on: bool = False

    @classmethod
    def for_cursor(
        cls,
        *,
        multiline: bool,
        line_prefix: str,
        suffix: str,
        max_generation_ms: float,
        bar: float = 0.0,
        onward: float = 0.0,
        run_on: bool = False,
    ) -> AnswerBounds:
        """The bounds at a cursor with ``line_prefix`` before it and ``suffix`` after it."""
        next_line = ""
        for line in suffix.split("\n")[1:]:
            if line.strip():
                next_line = line.strip()
                break
        return cls(
            multiline=multiline,
            indent=indent_width(line_prefix),
            next_line=next_line,
            max_generation_s=max(0.0, max_generation_ms) / 1000.0,
            bar=bar if multiline or run_on else 0.0,
            onward=onward,
            run_on=run_on and not multiline and bar > 0.0,
        )

    def doubts(self, offset: int, probability: float) -> bool:
        """Whether a token starting at ``offset`` of the answer with ``probability`` is unsure."""
        return probability < token_bar(offset == 0, self.bar, self.onward)

    def cut(self, text: str, generating_for: float, first_doubt: int | None = None) -> Cut | None:
        """Where ``text`` (the answer so far) ends, or None to read on.

        ``generating_for`` is the time since the first chunk, in seconds;
        ``first_doubt`` where the first token below ``bar`` starts (None: none yet).
        """
        first_end = text.find("\n")
        if first_end < 0:
            return None
        if not self.multiline and (
            not self.run_on or (first_doubt is not None and first_doubt <= first_end)
        ):
            return Cut(first_end, truncated=False)
        lines = text.split("\n")
        complete = lines[:-1]  # the last element is still being written
        kept = 0
        written = False
        for index, line in enumerate(complete):
            if index >= MAX_SUGGESTION_LINES:
                return Cut(kept - 1, truncated=True)
            if index > 0 and self._ends_before(line):
                return Cut(max(0, kept - 1), truncated=False)
            if index > 0 and first_doubt is not None and first_doubt < kept + len(line) + 1:
                return Cut(kept - 1, truncated=True)  # the model is unsure of this line
            kept += len(line) + 1
            written = written or bool(line.strip())
            if index > 0 and self._ends_after(line):
                return Cut(kept - 1, truncated=False)
        if first_doubt is not None and first_doubt >= kept > first_end:
            return Cut(kept - 1, truncated=True)  # unsure of the line being written
        if written and self.max_generation_s and generating_for >= self.max_generation_s:
            return Cut(kept - 1, truncated=True)
        return None

    def _ends_before(self, line: str) -> bool:
        """``line`` is no longer part of the block the answer fills."""
        stripped = line.strip()
        if not stripped:
            return False
        if self.next_line and stripped == self.next_line:
            return True
        width = indent_width(line)
        if self.run_on:
            return width < self.indent  # siblings at the cursor line's indentation go on
        return width < self.indent or (width == self.indent and not _closes_block(stripped))

    def _ends_after(self, line: str) -> bool:
        """``line`` closes the block at the cursor's own indentation."""
        stripped = line.strip()
        return indent_width(line) == self.indent and _closes_block(stripped)

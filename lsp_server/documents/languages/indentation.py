"""The indentation an auto-indenting editor gives a new line, per language and document.

``indent_unit`` reads the step from the document itself (a tab, or the
commonest increase in leading spaces between neighbouring lines), falling
back to the language's default; ``next_line_indent`` applies the language's
rules to the line before: one step in after a block opener or a bracket left
open, one step out after a block-ending statement (Python's ``return``),
otherwise the same. Without a language (text-only documents) only openers
that end the line count: ``{ ( [ :``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from lsp_server.documents.languages.spec import LanguageSpec

#: the step for a text-only document that shows none
TEXT_INDENT = "    "
#: line endings that indent the next line of a text-only document
TEXT_INDENT_AFTER = ("{", "(", "[", ":")
#: how many lines before a position ``indent_unit`` looks at
INDENT_SAMPLE_LINES = 60


def indent_of(line: str) -> str:
    """The leading whitespace of ``line``."""
    return line[: len(line) - len(line.lstrip())]


def indent_unit(lines: Iterable[str], default: str) -> str:
    """The document's indentation step, judged from ``lines`` (else ``default``)."""
    steps: Counter[int] = Counter()
    previous: int | None = None
    for line in lines:
        if not line.strip():
            continue
        ws = indent_of(line)
        if ws.startswith("\t"):
            return "\t"
        width = len(ws)
        if previous is not None and width > previous:
            steps[width - previous] += 1
        previous = width
    if not steps:
        return default
    width = max(steps, key=lambda w: (steps[w], -w))
    return " " * width


def next_line_indent(line: str, spec: LanguageSpec | None = None, unit: str | None = None) -> str:
    """The indentation an auto-indenting editor gives the line after ``line``."""
    step = unit or (spec.indent if spec is not None else TEXT_INDENT)
    indent = indent_of(line)
    body = line.strip()
    if spec is None:
        return indent + step if body.endswith(TEXT_INDENT_AFTER) else indent
    if spec.opens_block(body):
        return indent + step
    if spec.ends_block(body):
        return _dedent(indent, step)
    return indent


def _dedent(indent: str, step: str) -> str:
    if indent.endswith(step):
        return indent[: len(indent) - len(step)]
    return indent[: max(0, len(indent) - len(step))]

"""What ``scopecache trace synth``'s developer will do to each file, decided up front.

``FileDraft`` is one file being written: its final lines, the lines written
so far (in file order) and their current text, and the planned departures
from writing top to bottom. ``plan_file`` chooses them for a ``nonlinear``
share (0..1): imports and simple statements held back and added later, a
local variable written under another name and renamed when its function is
done, and a part of the file already written when it opens.
"""

from __future__ import annotations

import bisect
import random
import re
from dataclasses import dataclass, field

from lsp_server.documents.languages import LanguageSpec
from lsp_server.documents.languages.indentation import TEXT_INDENT

OPENERS = (":", "(", "[", "{")
_ASSIGNED = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*(?::[^=]*)?=[^=]")


@dataclass
class FileDraft:
    """One file being written: its final lines, the lines written so far, the plan."""

    uri: str
    final: list[str]
    #: the file's language (None: a text-only file) and the languageId it opens with
    spec: LanguageSpec | None = None
    language_id: str = "plaintext"
    #: the file's indentation step (the editor's auto-indent uses it)
    unit: str = TEXT_INDENT
    written: list[int] = field(default_factory=list)
    text: dict[int, str] = field(default_factory=dict)
    variant: dict[int, str] = field(default_factory=dict)
    #: planned renames: (first line, last line, written name, final name)
    renames: list[tuple[int, int, str, str]] = field(default_factory=list)
    deferred: set[int] = field(default_factory=set)
    frontier: int = 0
    opened: bool = False
    initial: str = ""
    trim: int | None = None

    def target(self, i: int) -> str:
        """The text line ``i`` is written as (a renamed variant, or its final text)."""
        return self.variant.get(i, self.final[i])

    def row(self, i: int) -> int:
        """The document row of final line ``i`` among the lines written so far."""
        return bisect.bisect_left(self.written, i)

    @property
    def done(self) -> bool:
        """Every line written, every held-back line added, every rename made."""
        return self.frontier >= len(self.final) and not self.deferred and not self.renames


def indent_of(line: str) -> str:
    """The leading whitespace of ``line``."""
    return line[: len(line) - len(line.lstrip())]


def plan_file(f: FileDraft, rng: random.Random, nonlinear: float) -> None:
    """Choose held-back lines, renamed variables and a pre-filled part."""
    lines, n = f.final, len(f.final)
    if nonlinear > 0:
        imports = [i for i, s in enumerate(lines) if s.startswith(("import ", "from "))]
        for i in imports[1:]:
            if "__future__" not in lines[i] and rng.random() < 0.6 * nonlinear:
                f.deferred.add(i)
        for i in range(1, n - 1):
            s, prev = lines[i], lines[i - 1].rstrip()
            balanced = sum(s.count(c) for c in "([{") == sum(s.count(c) for c in ")]}")
            simple = s.startswith(f.unit) and s.strip() and balanced and s.lstrip()[0] not in ")]}"
            if simple and not s.rstrip().endswith((*OPENERS, ",", "\\")) and prev.strip():
                if not prev.endswith((*OPENERS, ",", "\\")) and rng.random() < 0.04 * nonlinear:
                    f.deferred.add(i)
        if rng.random() < 0.5 * nonlinear:
            prefilled = int(n * rng.uniform(0.2, 0.6))
            f.frontier = prefilled
            for i in range(prefilled):
                if i not in f.deferred:
                    f.written.append(i)
                    f.text[i] = lines[i]
            f.initial = "\n".join(f.text[i] for i in f.written)
        for i, s in enumerate(lines):
            free = not f.renames or i > f.renames[-1][1]
            if i >= f.frontier and free and s.lstrip().startswith("def "):
                if rng.random() < nonlinear:
                    _plan_rename(f, i, rng)
    f.deferred.discard(0)


def _plan_rename(f: FileDraft, start: int, rng: random.Random) -> None:
    lines, depth = f.final, len(indent_of(f.final[start]))
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or len(indent_of(lines[end])) > depth):
        end += 1
    span = range(start + 1, end)
    text = "\n".join(lines[i] for i in span)
    names = sorted({m.group(1) for i in span if (m := _ASSIGNED.match(lines[i]))})
    names = [n for n in names if len(re.findall(rf"\b{n}\b", text)) >= 2]
    if not names:
        return
    name = rng.choice(names)
    alt = name[:3] + "_" if len(name) > 4 else name + "_"
    if re.search(rf"\b{re.escape(alt)}\b", text):
        return
    for i in span:
        if i not in f.deferred and re.search(rf"\b{name}\b", lines[i]):
            f.variant[i] = re.sub(rf"\b{name}\b", alt, lines[i])
    f.renames.append((start, end - 1, alt, name))

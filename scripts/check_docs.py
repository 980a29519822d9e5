"""Check the README and the docs: links that resolve, no commit hashes, a README that stays short.

The README is the product page and the PyPI long description; ``docs/`` is
the reference. Both rot quietly, so ``make lint`` runs this:

- every relative link (``[text](path)``, ``![alt](path)``, ``path#anchor``,
  ``#anchor``) in README.md, CHANGELOG.md, docs/*.md and the editors' READMEs
  resolves to a file in the tree, and its anchor to a heading of that file;
- the README's images use absolute URLs (PyPI shows no relative image);
- no page cites a commit (a 7-40 character hexadecimal word): a figure comes
  with the command that reproduces it, and its history goes to CHANGELOG.md;
- the README has at most 400 lines, and its quick start (the llama.cpp and
  Ollama commands, the VS Code settings and the lazy.nvim spec) sits in its
  first 200.

    python scripts/check_docs.py     # exit 1 and one line per problem
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
README_MAX_LINES = 400
QUICK_START_LINES = 200
#: what the README's first 200 lines must hold: both servers, both editors
QUICK_START_MARKERS = ("llama-server", "ollama", "```jsonc", "```lua")

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEXWORD = re.compile(r"(?<![0-9A-Za-z_#./-])[0-9a-f]{7,40}(?![0-9A-Za-z_/-])")
HTML_COMMENT = re.compile(r"<!--.*?-->", re.S)


def pages() -> list[Path]:
    """The Markdown files this check covers."""
    found = [README, ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
    found += [ROOT / "editors" / "vscode" / "README.md", ROOT / "editors" / "neovim" / "README.md"]
    return [p for p in found if p.exists()]


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file (duplicates get -1, -2 ...)."""
    seen: dict[str, int] = {}
    result: set[str] = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        match = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def link_problems(path: Path) -> list[str]:
    """Relative links of one page that do not resolve."""
    problems = []
    text = HTML_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text("utf-8"))
    name = path.relative_to(ROOT)
    for number, line in prose_lines(text):
        for match in LINK.finditer(line):
            target = match.group(1)
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:, ...
                continue
            file_part, _, fragment = target.partition("#")
            resolved = (path.parent / file_part).resolve() if file_part else path
            where = f"{name}:{number}: {target}"
            if not resolved.exists():
                problems.append(f"{where}: no such file")
                continue
            if fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
                problems.append(f"{where}: no heading #{fragment} in {resolved.name}")
    return problems


def hash_problems(path: Path) -> list[str]:
    """Words that look like commit hashes (hex with both letters and digits)."""
    problems = []
    name = path.relative_to(ROOT)
    for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        for match in HEXWORD.finditer(line):
            word = match.group(0)
            if re.search(r"[0-9]", word) and re.search(r"[a-f]", word):
                problems.append(f"{name}:{number}: {word} looks like a commit hash")
    return problems


def readme_problems() -> list[str]:
    """The README's length, its quick start's place and its images."""
    lines = README.read_text("utf-8").splitlines()
    problems = []
    if len(lines) > README_MAX_LINES:
        problems.append(f"README.md: {len(lines)} lines, at most {README_MAX_LINES}")
    head = "\n".join(lines[:QUICK_START_LINES])
    for marker in QUICK_START_MARKERS:
        if marker not in head:
            problems.append(f"README.md: {marker!r} not in its first {QUICK_START_LINES} lines")
    for number, line in prose_lines("\n".join(lines)):
        for match in re.finditer(r"!\[[^\]]*\]\(\s*([^)\s]+)", line):
            if not match.group(1).startswith("https://"):
                problems.append(
                    f"README.md:{number}: image {match.group(1)} needs an absolute https URL "
                    "(the README is the PyPI description)"
                )
    return problems


def problems() -> list[str]:
    """Every problem, one readable line each."""
    found = readme_problems()
    for path in pages():
        found += link_problems(path)
        found += hash_problems(path)
    return found


def main() -> int:
    """Print the problems; exit 1 when there are any."""
    found = problems()
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

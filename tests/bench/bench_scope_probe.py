"""The scope probe on real-world files: answers kept across an edit of the definition above.

Per file of ``tests.support.real_world`` (fetched once, pinned by SHA-256)
and per shape (``line``: the rest of one line is cut; ``definition``: the
rest of the definition is not written yet), ``tests.support.scope_probe``
probes every pair of neighbouring definitions and counts the answers the
cache still serves after the definition above was edited. The bar is 90%
per language and shape; ``tests/unit/completion/test_scope_probe.py``
asserts it.

Run::

    .venv/bin/python -m tests.bench.bench_scope_probe              # fetch, probe, table
    .venv/bin/python -m tests.bench.bench_scope_probe --only rust --misses
        # --misses: each lost answer, with what differed between the two contexts
    .venv/bin/python -m tests.bench.bench_scope_probe --dir DIR    # every source file under DIR

It exits 1 when a language misses the bar. Not part of ``make bench``: it
needs the registries (once).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lsp_server.documents.languages import CORE_LANGUAGES
from tests.support.real_world import SOURCES, cache_dir, fetch, sources_under
from tests.support.scope_probe import SHAPES, Probe, probe_file

BAR = 0.9


@dataclass
class Row:
    """One file's (or one language's) answers kept, per shape."""

    language: str
    label: str
    kept: dict[str, int]
    probes: dict[str, int]

    def share(self, shape: str) -> float:
        """The share of answers kept in ``shape``."""
        return self.kept[shape] / self.probes[shape] if self.probes[shape] else 1.0

    @property
    def passes(self) -> bool:
        """The bar, in every shape."""
        return all(self.share(shape) >= BAR for shape in self.kept)


def measure(
    language: str, label: str, path: Path, shapes: Sequence[str]
) -> tuple[Row, dict[str, list[Probe]]]:
    """Probe one file in each of ``shapes``."""
    probes = {shape: probe_file(path, shape) for shape in shapes}
    row = Row(
        language,
        label,
        kept={shape: sum(p.kept for p in found) for shape, found in probes.items()},
        probes={shape: len(found) for shape, found in probes.items()},
    )
    return row, probes


def per_language(rows: Sequence[Row]) -> list[Row]:
    """The rows summed per language, in the order they first appear."""
    totals: dict[str, Row] = {}
    for r in rows:
        total = totals.setdefault(
            r.language,
            Row(r.language, "", dict.fromkeys(r.kept, 0), dict.fromkeys(r.kept, 0)),
        )
        for shape in r.kept:
            total.kept[shape] += r.kept[shape]
            total.probes[shape] += r.probes[shape]
    for total in totals.values():
        total.label = str(sum(1 for r in rows if r.language == total.language))
    return list(totals.values())


def table(rows: Sequence[Row], shapes: Sequence[str]) -> str:
    """Per file, then per language (the bar is per language), as markdown."""
    cells = " | ".join(f"kept, {shape}" for shape in shapes)

    def line(r: Row) -> str:
        kept = " | ".join(
            f"{r.kept[s]}/{r.probes[s]} ({r.share(s):.0%})" for s in shapes
        )
        return f"| {r.language} | {r.label} | {kept} | {'pass' if r.passes else 'MISS'} |"

    rule = "|---|---|" + "---:|" * len(shapes) + "---|"
    out = [f"| language | file | {cells} | bar |", rule, *map(line, rows), ""]
    out += [f"| language | files | {cells} | bar |", rule, *map(line, per_language(rows))]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Fetch (or take ``--dir``), probe, print the table; 1 when a language misses the bar."""
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_scope_probe")
    parser.add_argument("--dir", type=Path, help="probe every source file under DIR instead")
    parser.add_argument("--only", default="", help="languages, comma-separated")
    parser.add_argument("--shape", choices=[*SHAPES, "both"], default="both")
    parser.add_argument("--misses", action="store_true",
                        help="print each lost answer and what differed")
    args = parser.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    shapes = list(SHAPES) if args.shape == "both" else [args.shape]
    problems: list[str] = []
    if args.dir is not None:
        work = sources_under(args.dir)
    else:
        files, problems = fetch([s for s in SOURCES if not only or s.language in only],
                                cache_dir())
        work = [(s.language, s.label, p) for s, p in files]
    work = [w for w in work if not only or w[0] in only]
    order = {name: i for i, name in enumerate(CORE_LANGUAGES)}
    work.sort(key=lambda w: (order.get(w[0], len(order)), w[1]))
    rows = []
    for language, label, path in work:
        print(f"probing {label}", file=sys.stderr, flush=True)
        row, probes = measure(language, label, path, shapes)
        rows.append(row)
        if args.misses:
            for shape, found in probes.items():
                for p in found:
                    if not p.kept:
                        print(f"  {shape} line {p.line + 1} ({p.cut} cut, {p.edit} at line "
                              f"{p.edited_line + 1}) {p.prefix.strip()!r}: {p.why}",
                              file=sys.stderr)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    print(table(rows, shapes))
    failing = [r.language for r in per_language(rows) if not r.passes]
    return 1 if failing or problems else 0


if __name__ == "__main__":
    raise SystemExit(main())

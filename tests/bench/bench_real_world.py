"""The languages acceptance bar, measured on real-world files instead of ours.

``tests/unit/kit/test_languages_acceptance.py`` checks issue 20's first bar
(hybrid serves at least 85% of requests without an upstream call, never a
stale serve, and is no less useful than ``policy = none``) on files written
for the project. This tool runs the same measurement on ordinary source files
of published packages, a few per core language (``tests.support.real_world``:
pinned by SHA-256, fetched from the package registries once and cached
outside the clone; a file that does not hash to its pin is reported and
skipped).

Per file, as the unit test does: a synthesized developer writes the file
(``synthesize``, seed 7), the requests go through the server's keys,
contexts and cache (``collect_requests``), and ``simulate`` runs the
``scope`` design with policies hybrid and none at capacity 256.

Run::

    .venv/bin/python -m tests.bench.bench_real_world            # fetch, measure, table
    .venv/bin/python -m tests.bench.bench_real_world --dir DIR  # every source file under DIR
    .venv/bin/python -m tests.bench.bench_real_world --only go --diff
        # --diff: the requests where hybrid's shown text differs from none's

It exits 1 when a language misses the bar. Not part of ``make test`` or CI:
it needs the registries.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lsp_server.documents.languages import CORE_LANGUAGES
from lsp_server.kit.simulate import untimed as simulate
from lsp_server.kit.simulate.designs import make_design
from lsp_server.kit.simulate.requests import collect_requests
from lsp_server.kit.simulate.strategies import SimRequest
from lsp_server.kit.synth.session import synthesize
from lsp_server.observe.trace.writer import write_trace
from tests.support.real_world import SOURCES, cache_dir, fetch, sources_under

SEED = 7
CAPACITY = 256
BAR = 0.85


@dataclass
class Row:
    """One file's figures."""

    language: str
    label: str
    lines: int
    requests: int = 0
    hits: int = 0
    stale: int = 0
    useful_hybrid: int = 0
    useful_none: int = 0

    @property
    def share(self) -> float:
        """Requests served without an upstream call."""
        return self.hits / self.requests if self.requests else 0.0

    @property
    def passes(self) -> bool:
        """The acceptance bar."""
        return self.share >= BAR and self.stale == 0 and self.useful_hybrid >= self.useful_none


def session_requests(path: Path) -> list[SimRequest]:
    """The request stream of a synthesized session writing ``path``, as the unit test makes it."""
    with tempfile.TemporaryDirectory(prefix="real-world-trace-") as tmp:
        trace = Path(tmp) / "session.jsonl"
        text = path.read_text(encoding="utf-8")
        write_trace(trace, synthesize({path.resolve().as_uri(): text}, seed=SEED))
        return collect_requests(trace)


def measure(language: str, label: str, path: Path) -> tuple[Row, list[SimRequest]]:
    """Hybrid and none at capacity 256 on one file's session."""
    requests = session_requests(path)
    hybrid, none = simulate.simulate(requests, policies=["hybrid", "none"],
                                     capacities=[CAPACITY])
    row = Row(language, label, path.read_text(encoding="utf-8").count("\n"),
              requests=hybrid.requests, hits=hybrid.hits, stale=hybrid.stale,
              useful_hybrid=hybrid.useful, useful_none=none.useful)
    return row, requests


def _shown(policy: str, requests: Sequence[SimRequest]) -> list[tuple[bool, str]]:
    from lsp_server.completion.pipeline import fit_to_line

    design = make_design("scope", requests, policy, CAPACITY)
    out = []
    for req in requests:
        cached = design.serve(req)
        if cached is None:
            if req.answer_raw:
                design.store(req, req.answer_raw)
            out.append((False, req.answer))
        else:
            out.append((True, fit_to_line(cached, req.line_suffix)))
    return out


def differences(requests: Sequence[SimRequest], limit: int = 20) -> list[str]:
    """The requests where hybrid is stale or less useful than none, one paragraph each."""
    hybrid, none = _shown("hybrid", requests), _shown("none", requests)
    lines = []
    for req, (hit, shown), (_, plain) in zip(requests, hybrid, none, strict=True):
        stale = hit and not (shown.startswith(req.answer) or req.answer.startswith(shown))
        worse = req.expect is not None and (
            simulate.consistent(plain, req.expect) and not simulate.consistent(shown, req.expect)
        )
        if stale or worse:
            lines.append(
                f"#{req.index} line {req.line + 1} col {req.character} "
                f"{'STALE' if stale else 'less useful'}\n"
                f"  prefix {req.line_prefix!r} suffix {req.line_suffix!r}\n"
                f"  served {shown!r}\n  none   {plain!r}\n  expect {req.expect!r}"
            )
    return lines[:limit]


def misses(requests: Sequence[SimRequest], limit: int = 40) -> list[str]:
    """The requests hybrid sent upstream, with the line they were made on."""
    hybrid = _shown("hybrid", requests)
    lines = [
        f"#{req.index} line {req.line + 1} col {req.character} "
        f"prefix {req.line_prefix!r} suffix {req.line_suffix!r} answer {req.answer!r}"
        for req, (hit, _) in zip(requests, hybrid, strict=True)
        if not hit
    ]
    return lines[:limit]


def table(rows: Sequence[Row]) -> str:
    """Per file, then per language (the bar is per language), as markdown."""
    head = ("| language | file | lines | requests | without upstream | stale "
            "| useful hybrid | useful none | bar |\n|---|---|---:|---:|---:|---:|---:|---:|---|")
    out = [head]
    for r in rows:
        out.append(f"| {r.language} | {r.label} | {r.lines:,} | {r.requests:,} | {r.share:.1%} "
                   f"| {r.stale} | {r.useful_hybrid:,} | {r.useful_none:,} "
                   f"| {'pass' if r.passes else 'MISS'} |")
    out.append("")
    out.append(head.replace("| file | lines ", "| files | lines "))
    for language in dict.fromkeys(r.language for r in rows):
        group = [r for r in rows if r.language == language]
        total = Row(language, str(len(group)), sum(r.lines for r in group),
                    requests=sum(r.requests for r in group), hits=sum(r.hits for r in group),
                    stale=sum(r.stale for r in group),
                    useful_hybrid=sum(r.useful_hybrid for r in group),
                    useful_none=sum(r.useful_none for r in group))
        out.append(f"| {language} | {total.label} | {total.lines:,} | {total.requests:,} "
                   f"| {total.share:.1%} | {total.stale} | {total.useful_hybrid:,} "
                   f"| {total.useful_none:,} | {'pass' if total.passes else 'MISS'} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Fetch (or take ``--dir``), measure, print the table; 1 when a language misses the bar."""
    parser = argparse.ArgumentParser(prog="python -m tests.bench.bench_real_world")
    parser.add_argument("--dir", type=Path, help="measure every source file under DIR instead")
    parser.add_argument("--only", default="", help="languages, comma-separated")
    parser.add_argument("--diff", action="store_true",
                        help="print the requests where hybrid is stale or less useful than none")
    parser.add_argument("--misses", action="store_true",
                        help="print the requests hybrid sent upstream (first 40 per file)")
    args = parser.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
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
        print(f"measuring {label}", file=sys.stderr, flush=True)
        row, requests = measure(language, label, path)
        rows.append(row)
        if args.diff:
            for line in differences(requests):
                print(line, file=sys.stderr)
        if args.misses:
            for line in misses(requests):
                print(line, file=sys.stderr)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    print(table(rows))
    languages = {r.language for r in rows}
    failing = [
        lang for lang in languages
        if not Row(lang, "", 0, requests=sum(r.requests for r in rows if r.language == lang),
                   hits=sum(r.hits for r in rows if r.language == lang),
                   stale=sum(r.stale for r in rows if r.language == lang),
                   useful_hybrid=sum(r.useful_hybrid for r in rows if r.language == lang),
                   useful_none=sum(r.useful_none for r in rows if r.language == lang)).passes
    ]
    return 1 if failing or problems else 0


if __name__ == "__main__":
    raise SystemExit(main())


"""``scopecache trace synth``: a synthesized developer writing the given files.

The typist writes each file mostly top to bottom, one character per
keystroke (log-normal timing around 85 ms, longer pauses at line ends), with
the editor's auto-indent (Enter inserts the indentation; the typist types or
deletes only the difference; a blank line's indentation is trimmed when the
cursor leaves it), inline completion requests after keystrokes (a few
``list`` ones), some lines accepted whole (one change inserting the real rest
of the line), typos fixed with backspace, returns to earlier code (a request
at an earlier line end, a line deleted and typed again), and several files
interleaved. Forward-typing requests carry ``expect``: what the user goes on
to type up to the end of the line (omitted when that is nothing).

``nonlinear`` (0..1) scales planned non-sequential work: imports and
statements held back and added later from further down the file, a local
variable written under another name and renamed when its function is done,
undo/redo bursts, and files that open partly written. Files open empty (or
with that pre-filled part). Positions are UTF-16; line endings are
normalized to LF. Each file opens with the languageId its extension
names (``plaintext`` when no grammar is registered for it), and the editor's
auto-indent follows that language's rules with the file's own indentation
step. Every session is replayed before it is returned: the
changes must reproduce each final text exactly, or ``SynthesisError``.

The plan is made up front by ``plan``; ``typist`` turns it into
keystrokes; this module joins them, checks the result and writes the file.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path

from lsp_server.documents.languages import default_registry
from lsp_server.documents.languages.indentation import TEXT_INDENT, indent_unit
from lsp_server.kit.synth.plan import FileDraft, plan_file
from lsp_server.kit.synth.typist import Typist
from lsp_server.observe.trace.documents import TraceDocuments
from lsp_server.observe.trace.format import CloseEvent, CompleteEvent, Trace, TraceHeader
from lsp_server.observe.trace.writer import TraceWriter

SYNTH_VERSION = 1


class SynthesisError(Exception):
    """The synthesized changes do not reproduce the files (a generator bug)."""


def synthesize(texts: Mapping[str, str], *, seed: int = 0, nonlinear: float = 0.0) -> Trace:
    """A session writing ``texts`` (URI -> final text); self-checked by replaying it."""
    rng = random.Random(seed)
    finals = {uri: text.replace("\r\n", "\n") for uri, text in texts.items()}
    registry = default_registry()
    files = []
    for uri, text in finals.items():
        spec = registry.for_uri(uri)
        lines = text.split("\n")
        default = spec.indent if spec is not None else TEXT_INDENT
        files.append(
            FileDraft(
                uri=uri,
                final=lines,
                spec=spec,
                language_id=registry.language_id_for(uri),
                unit=indent_unit(lines, default),
            )
        )
    for f in files:
        plan_file(f, rng, max(0.0, min(1.0, nonlinear)))
    events = Typist(files, rng, nonlinear).run()
    meta = {
        "generator": "scopecache trace synth",
        "generatorVersion": SYNTH_VERSION,
        "seed": seed,
        "nonlinear": nonlinear,
        "files": list(finals),
        "prefilledLines": {f.uri: f.initial.count("\n") + 1 for f in files if f.initial},
    }
    trace = Trace(header=TraceHeader(final=finals, meta=meta), events=events)
    _self_check(trace)
    return trace


def _self_check(trace: Trace) -> None:
    docs, seen = TraceDocuments(), {}
    try:
        for event in trace.events:
            if isinstance(event, CloseEvent):
                seen[event.uri] = docs.text(event.uri)
            docs.apply(event)
    except ValueError as exc:
        raise SynthesisError(f"synthesized event does not fit its document: {exc}") from exc
    for uri, final in trace.header.final.items():
        if seen.get(uri) != final:
            raise SynthesisError(f"replaying the changes does not reproduce {uri}")


def sample_files() -> list[Path]:
    """The sample Python files shipped in the package (for the demo and tests)."""
    return [p for p in language_samples() if p.suffix == ".py"]


def language_samples() -> list[Path]:
    """Every sample file shipped in the package: Python and one or more per other language."""
    folder = resources.files("lsp_server") / "samples"
    return sorted(Path(str(p)) for p in folder.iterdir() if p.is_file())


def run(args: argparse.Namespace) -> int:
    """Entry point of ``scopecache trace synth``."""
    texts: dict[str, str] = {}
    for name in args.files:
        path = Path(name)
        try:
            texts[path.resolve().as_uri()] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            print(f"scopecache trace synth: cannot read {name}: {exc}", file=sys.stderr)
            return 2
    if not 0.0 <= args.nonlinear <= 1.0:
        print("scopecache trace synth: --nonlinear must be in [0, 1]", file=sys.stderr)
        return 2
    trace = synthesize(texts, seed=args.seed, nonlinear=args.nonlinear)
    with TraceWriter(args.output, trace.header) as writer:
        for event in trace.events:
            writer.write(event)
    requests = sum(isinstance(e, CompleteEvent) for e in trace.events)
    print(
        f"wrote {args.output}: {len(trace.events)} events, {requests} completion requests, "
        f"{len(texts)} files, {trace.events[-1].t if trace.events else 0:.0f} s of typing"
    )
    return 0

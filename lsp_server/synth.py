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
normalized to LF. Every session is replayed before it is returned: the
changes must reproduce each final text exactly, or ``SynthesisError``.
"""

from __future__ import annotations

import argparse
import bisect
import math
import random
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from lsp_server.trace import (
    ChangeEvent,
    CloseEvent,
    CompleteEvent,
    CompletionKind,
    Event,
    OpenEvent,
    Position,
    TextChange,
    Trace,
    TraceHeader,
    utf16_len,
)
from lsp_server.trace_documents import TraceDocuments
from lsp_server.trace_writer import TraceWriter

SYNTH_VERSION = 1
INDENT = "    "
_OPENERS = (":", "(", "[", "{")
_DEDENT_AFTER = re.compile(r"(return|pass|raise|break|continue)\b")
_ASSIGNED = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*(?::[^=]*)?=[^=]")


class SynthesisError(Exception):
    """The synthesized changes do not reproduce the files (a generator bug)."""


@dataclass
class _File:
    uri: str
    final: list[str]
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
        return self.variant.get(i, self.final[i])

    def row(self, i: int) -> int:
        return bisect.bisect_left(self.written, i)

    @property
    def done(self) -> bool:
        return self.frontier >= len(self.final) and not self.deferred and not self.renames


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _auto_indent(prev: str) -> str:
    ws, body = _indent_of(prev), prev.strip()
    if body.endswith(_OPENERS):
        return ws + INDENT
    if _DEDENT_AFTER.match(body):
        return ws[: max(0, len(ws) - len(INDENT))]
    return ws


class _Typist:
    def __init__(self, files: list[_File], rng: random.Random, nonlinear: float) -> None:
        self.files, self.rng, self.nonlinear = files, rng, nonlinear
        self.t = 0.0
        self.events: list[Event] = []

    # -- primitives ------------------------------------------------------
    def _pause(self, median: float, sigma: float, low: float, high: float) -> None:
        self.t += min(high, max(low, math.exp(self.rng.gauss(math.log(median), sigma))))

    def _pos(self, f: _File, i: int, col: int | None = None) -> Position:
        line = f.text[i]
        return Position(f.row(i), utf16_len(line if col is None else line[:col]))

    def _change(self, f: _File, *changes: TextChange) -> None:
        self.events.append(ChangeEvent(t=self.t, uri=f.uri, changes=changes))

    def _replace(self, f: _File, i: int, start: int, new: str) -> None:
        """Replace line i's text from str index ``start`` to its end with ``new``."""
        line = f.text[i]
        self._change(f, TextChange(new, (self._pos(f, i, start), self._pos(f, i))))
        f.text[i] = line[:start] + new

    def _request(self, f: _File, i: int, chance: float = 0.9) -> None:
        if self.rng.random() >= chance:
            return
        cur, tgt = f.text[i], f.target(i)
        expect = tgt[len(cur) :] if tgt.startswith(cur) and tgt != cur else None
        kind: CompletionKind = (
            "list" if cur[-1:].isalnum() and self.rng.random() < 0.03 else "inline"
        )
        self.events.append(
            CompleteEvent(
                t=self.t + 0.004, uri=f.uri, position=self._pos(f, i), kind=kind, expect=expect
            )
        )

    def _trim(self, f: _File) -> None:
        if f.trim is not None:
            i, f.trim = f.trim, None
            self._pause(0.1, 0.3, 0.03, 0.5)
            self._replace(f, i, 0, "")

    # -- writing lines ---------------------------------------------------
    def _open_line(self, f: _File, i: int) -> None:
        r = f.row(i)
        if f.trim is not None and (r == 0 or f.written[r - 1] != f.trim):
            self._trim(f)
        self._pause(0.09, 0.3, 0.04, 0.6)
        if not f.written:
            ws = ""
        elif r == 0:
            self._change(f, TextChange("\n", (Position(0, 0), Position(0, 0))))
            ws = ""
        else:
            prev = f.written[r - 1]
            ws = _auto_indent(f.text[prev])
            start = 0 if f.trim == prev else len(f.text[prev])
            self._replace(f, prev, start, "\n" + ws)
            f.text[prev] = f.text[prev][: -len(ws) - 1]
            f.trim = None
        bisect.insort(f.written, i)
        f.text[i] = ws
        self._request(f, i)
        self._fit_indent(f, i)
        self._type_rest(f, i)

    def _fit_indent(self, f: _File, i: int) -> None:
        tgt = f.target(i)
        want = tgt if not tgt.strip() else _indent_of(tgt)
        cur = f.text[i]
        if tgt == "" and cur:
            f.trim = i
            return
        while f.text[i] != want:
            cur = f.text[i]
            self._pause(0.1, 0.3, 0.04, 0.5)
            if want.startswith(cur):
                step = want[len(cur) : len(cur) + len(INDENT)]
                self._replace(f, i, len(cur), step)
            elif cur.startswith(want):
                keep = max(len(want), (len(cur) - 1) // len(INDENT) * len(INDENT))
                self._replace(f, i, keep, "")
            else:
                self._replace(f, i, 0, "")
            self._request(f, i)

    def _type_rest(self, f: _File, i: int) -> None:
        if f.trim == i:
            return
        tgt = f.target(i)
        rng = self.rng
        body = len(tgt) - len(tgt.lstrip())
        accept_at = -1
        if len(tgt) - body >= 6 and rng.random() < 0.2:
            accept_at = rng.randint(body + 1, len(tgt) - 3)
        undo_at = -1
        if len(tgt) - body >= 10 and rng.random() < 0.3 * self.nonlinear:
            undo_at = rng.randint(body + 8, len(tgt))
        while f.text[i] != tgt:
            n = len(f.text[i])
            if n == accept_at:
                self._pause(0.45, 0.4, 0.15, 2.0)
                self._replace(f, i, n, tgt[n:])
                self._request(f, i, 0.5)
                break
            ch = tgt[n]
            if ch.isalnum() and rng.random() < 0.015:
                self._typo(f, i, ch)
            self._pause(0.085, 0.35, 0.03, 0.6)
            self._replace(f, i, n, ch)
            self._request(f, i)
            if n + 1 == undo_at:
                self._undo_redo(f, i, body)
        self._pause(0.5, 0.6, 0.12, 6.0)
        if rng.random() < 0.04:
            self.t += rng.uniform(2.0, 8.0)

    def _typo(self, f: _File, i: int, intended: str) -> None:
        n = len(f.text[i])
        wrong = self.rng.choice([c for c in "asdfghjklertyuio" if c != intended])
        extra = intended if self.rng.random() < 0.4 else ""
        for ch in wrong + extra:
            self._pause(0.085, 0.35, 0.03, 0.6)
            self._replace(f, i, len(f.text[i]), ch)
            self._request(f, i)
        self._pause(0.3, 0.4, 0.1, 1.5)
        while len(f.text[i]) > n:
            self._pause(0.12, 0.3, 0.05, 0.6)
            self._replace(f, i, len(f.text[i]) - 1, "")
            self._request(f, i, 0.5)

    def _undo_redo(self, f: _File, i: int, body: int) -> None:
        chunks = re.findall(r"\w+|\W", f.text[i][body:])
        undone = [chunks.pop() for _ in range(min(len(chunks), self.rng.randint(1, 3)))]
        for chunk in undone:
            self._pause(0.2, 0.3, 0.08, 0.8)
            self._replace(f, i, len(f.text[i]) - len(chunk), "")
            self._request(f, i)
        for chunk in reversed(undone):
            self._pause(0.2, 0.3, 0.08, 0.8)
            self._replace(f, i, len(f.text[i]), chunk)
            self._request(f, i)

    # -- episodes ----------------------------------------------------------
    def _rename(self, f: _File, first: int, last: int, alt: str, name: str) -> None:
        self._trim(f)
        changes: list[TextChange] = []
        pattern = re.compile(rf"\b{re.escape(alt)}\b")
        for i in sorted((i for i in f.variant if first <= i <= last), reverse=True):
            line = f.text[i]
            for m in reversed(list(pattern.finditer(line))):
                start = self._pos(f, i, m.start())
                changes.append(TextChange(name, (start, self._pos(f, i, m.end()))))
            f.text[i] = f.final[i]
            del f.variant[i]
        self._pause(1.2, 0.4, 0.4, 4.0)
        if changes:
            self._change(f, *changes)

    def _look_back(self, f: _File) -> None:
        """Return to an earlier line: ask there, or delete and retype it."""
        done = [i for i in f.written[-40:-1] if f.text[i].strip() and f.text[i] == f.target(i)]
        if not done:
            return
        self._trim(f)
        i = self.rng.choice(done)
        self._pause(1.0, 0.5, 0.3, 4.0)
        if self.rng.random() < 0.6:
            self._request(f, i, 1.0)
            return
        self._replace(f, i, len(_indent_of(f.text[i])), "")
        self._request(f, i)
        self._type_rest(f, i)

    def _step(self, f: _File) -> None:
        """Write the next line of ``f``, then maybe return to earlier code."""
        i = f.frontier
        f.frontier += 1
        if i < len(f.final) and i not in f.deferred and i not in f.text:
            self._open_line(f, i)
        for rename in list(f.renames):
            if f.frontier > rename[1]:
                f.renames.remove(rename)
                self._rename(f, *rename)
        rng = self.rng
        late = [j for j in f.deferred if j < f.frontier - 6 or f.frontier >= len(f.final)]
        if late and (f.frontier >= len(f.final) or rng.random() < 0.12 * self.nonlinear):
            j = rng.choice(late)
            f.deferred.discard(j)
            self._open_line(f, j)
        elif rng.random() < 0.045:
            self._look_back(f)

    def run(self) -> list[Event]:
        pending = list(self.files)
        while pending:
            f = self.rng.choice(pending)
            if not f.opened:
                f.opened = True
                self.t += 0.3
                self.events.append(OpenEvent(t=self.t, uri=f.uri, text=f.initial))
            for _ in range(self.rng.randint(6, 30)):
                self._step(f)
                if f.done:
                    break
            self._trim(f)
            if f.done:
                pending.remove(f)
            self._pause(2.0, 0.5, 0.5, 10.0)
        for f in self.files:
            self.events.append(CloseEvent(t=self.t, uri=f.uri))
            self.t += 0.05
        return self.events


def _plan(f: _File, rng: random.Random, nonlinear: float) -> None:
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
            simple = s.startswith(INDENT) and s.strip() and balanced and s.lstrip()[0] not in ")]}"
            if simple and not s.rstrip().endswith((*_OPENERS, ",", "\\")) and prev.strip():
                if not prev.endswith((*_OPENERS, ",", "\\")) and rng.random() < 0.04 * nonlinear:
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


def _plan_rename(f: _File, start: int, rng: random.Random) -> None:
    lines, depth = f.final, len(_indent_of(f.final[start]))
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or len(_indent_of(lines[end])) > depth):
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


def synthesize(texts: Mapping[str, str], *, seed: int = 0, nonlinear: float = 0.0) -> Trace:
    """A session writing ``texts`` (URI -> final text); self-checked by replaying it."""
    rng = random.Random(seed)
    finals = {uri: text.replace("\r\n", "\n") for uri, text in texts.items()}
    files = [_File(uri=uri, final=text.split("\n")) for uri, text in finals.items()]
    for f in files:
        _plan(f, rng, max(0.0, min(1.0, nonlinear)))
    events = _Typist(files, rng, nonlinear).run()
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
    folder = resources.files("lsp_server") / "samples"
    return sorted(Path(str(p)) for p in folder.iterdir() if p.name.endswith(".py"))


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

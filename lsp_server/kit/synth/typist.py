"""The keystrokes of ``scopecache trace synth``'s developer, as trace events.

``Typist`` writes planned files (``plan.FileDraft``) mostly top to
bottom, one character per keystroke (log-normal timing around 85 ms, longer
pauses at line ends), with the editor's auto-indent, inline completion
requests after keystrokes (a few ``list`` ones), some lines accepted whole,
typos fixed with backspace, undo/redo bursts, returns to earlier code, the
planned renames and held-back lines, and several files interleaved.
"""

from __future__ import annotations

import bisect
import math
import random
import re

from lsp_server.documents.languages.indentation import next_line_indent
from lsp_server.kit.synth.plan import FileDraft, indent_of
from lsp_server.observe.trace.format import (
    ChangeEvent,
    CloseEvent,
    CompleteEvent,
    CompletionKind,
    Event,
    OpenEvent,
    Position,
    TextChange,
    utf16_len,
)


def _auto_indent(f: FileDraft, prev: str) -> str:
    """What the editor indents a new line with: the language's rule, the file's step."""
    return next_line_indent(prev, f.spec, f.unit)


class Typist:
    """Types planned files into a list of trace events, in trace time."""

    def __init__(self, files: list[FileDraft], rng: random.Random, nonlinear: float) -> None:
        self.files, self.rng, self.nonlinear = files, rng, nonlinear
        self.t = 0.0
        self.events: list[Event] = []

    # -- primitives ------------------------------------------------------
    def _pause(self, median: float, sigma: float, low: float, high: float) -> None:
        self.t += min(high, max(low, math.exp(self.rng.gauss(math.log(median), sigma))))

    def _pos(self, f: FileDraft, i: int, col: int | None = None) -> Position:
        line = f.text[i]
        return Position(f.row(i), utf16_len(line if col is None else line[:col]))

    def _change(self, f: FileDraft, *changes: TextChange) -> None:
        self.events.append(ChangeEvent(t=self.t, uri=f.uri, changes=changes))

    def _replace(self, f: FileDraft, i: int, start: int, new: str) -> None:
        """Replace line i's text from str index ``start`` to its end with ``new``."""
        line = f.text[i]
        self._change(f, TextChange(new, (self._pos(f, i, start), self._pos(f, i))))
        f.text[i] = line[:start] + new

    def _request(self, f: FileDraft, i: int, chance: float = 0.9) -> None:
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

    def _trim(self, f: FileDraft) -> None:
        if f.trim is not None:
            i, f.trim = f.trim, None
            self._pause(0.1, 0.3, 0.03, 0.5)
            self._replace(f, i, 0, "")

    # -- writing lines ---------------------------------------------------
    def _open_line(self, f: FileDraft, i: int) -> None:
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
            ws = _auto_indent(f, f.text[prev])
            start = 0 if f.trim == prev else len(f.text[prev])
            self._replace(f, prev, start, "\n" + ws)
            f.text[prev] = f.text[prev][: -len(ws) - 1]
            f.trim = None
        bisect.insort(f.written, i)
        f.text[i] = ws
        self._request(f, i)
        self._fit_indent(f, i)
        self._type_rest(f, i)

    def _fit_indent(self, f: FileDraft, i: int) -> None:
        tgt = f.target(i)
        want = tgt if not tgt.strip() else indent_of(tgt)
        cur = f.text[i]
        if tgt == "" and cur:
            f.trim = i
            return
        while f.text[i] != want:
            cur = f.text[i]
            self._pause(0.1, 0.3, 0.04, 0.5)
            if want.startswith(cur):
                step = want[len(cur) : len(cur) + len(f.unit)]
                self._replace(f, i, len(cur), step)
            elif cur.startswith(want):
                keep = max(len(want), (len(cur) - 1) // len(f.unit) * len(f.unit))
                self._replace(f, i, keep, "")
            else:
                self._replace(f, i, 0, "")
            self._request(f, i)

    def _type_rest(self, f: FileDraft, i: int) -> None:
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

    def _typo(self, f: FileDraft, i: int, intended: str) -> None:
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

    def _undo_redo(self, f: FileDraft, i: int, body: int) -> None:
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
    def _rename(self, f: FileDraft, first: int, last: int, alt: str, name: str) -> None:
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

    def _look_back(self, f: FileDraft) -> None:
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
        self._replace(f, i, len(indent_of(f.text[i])), "")
        self._request(f, i)
        self._type_rest(f, i)

    def _step(self, f: FileDraft) -> None:
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
        """Open, write and close every file, interleaved; returns the events."""
        pending = list(self.files)
        while pending:
            f = self.rng.choice(pending)
            if not f.opened:
                f.opened = True
                self.t += 0.3
                self.events.append(
                    OpenEvent(t=self.t, uri=f.uri, language_id=f.language_id, text=f.initial)
                )
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

"""Score a confidence bar on the model's answers against what the developer wrote.

Each ``ScoredAnswer`` is one answer the model gave at a cursor, with the
probability of its doubtful tokens (``cache.entry.Confidence``), and what the
developer went on to write on that line (``expect``, as in a trace's
``complete`` events). For each bar, ``score_bars`` applies the same
decision the server applies (``lsp_server.completion.gate``) and counts:

* ``shown``: answers the gate lets out at that bar, split into ``useful``
  (the first line shown agrees with ``expect``: it starts it, or goes on
  past it) and ``wrong``;
* ``held``: answers held back (nothing left to show);
* ``charsSaved``: characters Tab would save on the line over the useful
  ones (the first line shown, up to what was then written).

The useful rule is the typing benchmark's (``tests.support.typing_session``).

Records are JSON Lines, one object per answer: ``answer``, ``doubts``
(``[[offset, probability], ...]``), ``expect``, and optionally
``linePrefix``, ``lineSuffix``, ``nextLine``, ``lineAbove`` and
``language`` (a languageId: the gate then reads string literals by that
language's rules, as the server does; without it, by the default ones).
The measurement on the real model writes them
(``tests.bench.confidence_threshold``).

A session recorded by ``serve --record-trace`` has its judged answers in
the side record ``TRACE.answers.jsonl`` (``lsp_server.server.recorder``);
``answers_from_trace`` pairs each with what the developer wrote on its line,
read from the trace: the line from the answer's cursor on, as it stood when
the developer left it (a change elsewhere or a new line, a request on
another line, the document closed), or nothing if what was before the
cursor had changed by then, and with the language its document was opened
with. Answers the service gave no probabilities for are left out (no bar
applies to them).

    python -m lsp_server.kit.confidence ANSWERS.jsonl [--bars 0,0.1,0.2,...]
        [--onward 0,0.6,0.7] [--json]
    python -m lsp_server.kit.confidence --trace TRACE.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cache.entry import Confidence
from lsp_server.completion.gate import ShowBar, Surroundings, gate, strings_of
from lsp_server.observe.trace.documents import TraceDocuments
from lsp_server.observe.trace.format import (
    ChangeEvent,
    CloseEvent,
    CompleteEvent,
    Event,
    Position,
    ShownEvent,
)
from lsp_server.observe.trace.reader import iter_trace

DEFAULT_BARS = (0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: onward bars ``--onward`` tries when given none: 0 is the bar itself
DEFAULT_ONWARD = (0.0,)


@dataclass(frozen=True, slots=True)
class ScoredAnswer:
    """One answer of the model at a cursor and what the developer then wrote on the line."""

    answer: str
    confidence: Confidence
    expect: str
    around: Surroundings = Surroundings("", "")
    #: the document's languageId ("": not recorded; the gate's default reading)
    language: str = ""

    def to_json(self) -> dict[str, Any]:
        """The record's JSON object."""
        around = self.around
        record = {
            "answer": self.answer, "doubts": self.confidence.to_list(), "expect": self.expect,
            "linePrefix": around.line_prefix, "lineSuffix": around.line_suffix,
            "nextLine": around.next_line, "lineAbove": around.line_above,
        }  # fmt: skip
        if self.language:
            record["language"] = self.language
        return record

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScoredAnswer:
        """Parse ``to_json`` output; raises ValueError on anything malformed."""
        try:
            language = str(data.get("language") or "")
            around = Surroundings(
                str(data.get("linePrefix", "")), str(data.get("lineSuffix", "")),
                str(data.get("nextLine", "")), str(data.get("lineAbove", "")),
                strings_of(language.lower()),
            )  # fmt: skip
            return cls(
                str(data["answer"]), Confidence.from_list(data["doubts"]), str(data["expect"]),
                around, language,
            )  # fmt: skip
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed answer record: {exc}") from exc


@dataclass(slots=True)
class BarScore:
    """What one bar would have shown over a set of answers."""

    bar: float
    #: the bar past the first token (``ShowBar.min_onward_probability``; 0: the bar)
    onward: float = 0.0
    shown: int = 0
    useful: int = 0
    wrong: int = 0
    held: int = 0
    chars_saved: int = 0

    def to_json(self) -> dict[str, Any]:
        """camelCase, as the kit's other outputs."""
        shown = self.shown
        return {
            "bar": self.bar, "onward": self.onward, "shown": shown, "useful": self.useful,
            "wrong": self.wrong, "held": self.held, "charsSaved": self.chars_saved,
            "precision": round(self.useful / shown, 4) if shown else 0.0,
        }  # fmt: skip


def first_line(text: str) -> str:
    """A suggestion's first line."""
    return text.split("\n", 1)[0]


def useful_chars(shown: str, expect: str) -> int:
    """Characters Tab saves on the line with ``shown``: 0 when its first line disagrees."""
    head = first_line(shown)
    if not head.strip():
        return 0
    if expect.startswith(head):
        return len(head)
    if expect and head.startswith(expect):
        return len(expect)
    return 0


def score_bars(
    answers: Iterable[ScoredAnswer],
    bars: Sequence[float],
    onward: Sequence[float] = DEFAULT_ONWARD,
) -> list[BarScore]:
    """Score every bar in ``bars`` with every onward bar in ``onward`` over ``answers``."""
    scores = [BarScore(bar, later) for bar in bars for later in onward]
    for item in answers:
        for score in scores:
            bar = ShowBar(score.bar, score.onward)
            verdict = gate(item.answer, item.confidence, bar, item.around)
            if not verdict.text:
                score.held += 1
                continue
            score.shown += 1
            saved = useful_chars(verdict.text, item.expect)
            if saved:
                score.useful += 1
                score.chars_saved += saved
            else:
                score.wrong += 1
    return scores


def read_answers(path: Path) -> list[ScoredAnswer]:
    """The records of a JSON Lines file; raises ValueError naming the bad line."""
    answers = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                answers.append(ScoredAnswer.from_json(json.loads(line)))
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: {exc}") from exc
    return answers


class _Open:
    """A judged answer whose line the developer has not left yet."""

    __slots__ = ("record", "uri", "position", "prefix")

    def __init__(self, record: dict[str, Any], docs: TraceDocuments | None) -> None:
        self.uri = str(record["uri"])
        # the language its document was opened with (the side record has none)
        language = docs.language.get(self.uri, "") if docs is not None else ""
        self.record = {"language": language, **record}
        where = record["position"]
        self.position = Position(int(where["line"]), int(where["character"]))
        self.prefix = str(record.get("linePrefix", ""))

    def leaves(self, event: Event) -> bool:
        """Whether ``event`` takes the developer off this answer's line."""
        if isinstance(event, CloseEvent):
            return event.uri == self.uri
        if isinstance(event, CompleteEvent | ShownEvent):
            return event.uri == self.uri and event.position.line != self.position.line
        if isinstance(event, ChangeEvent) and event.uri == self.uri:
            line = self.position.line
            for change in event.changes:
                if change.range is None or "\n" in change.text:
                    return True
                start, end = change.range
                if start.line != line or end.line != line:
                    return True
        return False

    def expect(self, docs: TraceDocuments) -> str:
        """What was written on the line from the cursor on ("" if what was before it changed)."""
        if self.uri not in docs or self.position.line >= docs.line_count(self.uri):
            return ""
        line = docs.line(self.uri, self.position.line)
        try:
            _, cursor = docs.index(self.uri, self.position)
        except ValueError:
            return ""
        return line[cursor:] if line[:cursor] == self.prefix else ""


def answers_from_trace(trace: Path, side: Path | None = None) -> list[ScoredAnswer]:
    """The judged answers of a recorded session, each with what was then written on its line."""
    side = side if side is not None else trace.with_name(trace.name + ".answers.jsonl")
    records = [json.loads(line) for line in side.read_text(encoding="utf-8").splitlines() if line]
    waiting = sorted(
        (r for r in records if isinstance(r.get("doubts"), list)), key=lambda r: float(r["t"])
    )
    out: list[ScoredAnswer] = []
    open_: list[_Open] = []
    docs: TraceDocuments | None = None

    def resolve(item: _Open, documents: TraceDocuments) -> None:
        out.append(ScoredAnswer.from_json({**item.record, "expect": item.expect(documents)}))

    _, events = iter_trace(trace)
    for event, docs in events:
        while waiting and float(waiting[0]["t"]) <= event.t:
            open_.append(_Open(waiting.pop(0), docs))
        still = []
        for item in open_:
            if item.leaves(event):
                resolve(item, docs)
            else:
                still.append(item)
        open_ = still
    if docs is not None:
        for item in open_ + [_Open(r, docs) for r in waiting]:
            resolve(item, docs)
    return out


def table(scores: Sequence[BarScore]) -> str:
    """A plain-text table of the scores, one row per bar and onward bar."""
    rows = ["  bar  onward  shown  useful  wrong  held  chars saved  precision"]
    for s in scores:
        precision = s.useful / s.shown if s.shown else 0.0
        rows.append(
            f"{s.bar:5.2f}  {s.onward:6.2f}  {s.shown:5d}  {s.useful:6d}  {s.wrong:5d}  {s.held:4d}"
            f"  {s.chars_saved:11d}  {precision:9.2f}"
        )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lsp_server.kit.confidence ANSWERS.jsonl``: score the bars."""
    parser = argparse.ArgumentParser(prog="python -m lsp_server.kit.confidence")
    parser.add_argument("answers", type=Path, nargs="?")
    parser.add_argument("--trace", type=Path, help="a trace recorded by serve --record-trace")
    parser.add_argument("--bars", default=",".join(str(b) for b in DEFAULT_BARS),
                        help="bars for a suggestion's first token, comma-separated "
                             "(default: %(default)s)")
    parser.add_argument("--onward", default="0",
                        help="bars past the first token (completion.minOnwardProbability), "
                             "comma-separated, each scored with every bar; 0 is the bar itself "
                             "(default: %(default)s)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        bars = [float(b) for b in args.bars.split(",") if b.strip()]
        onward = [float(b) for b in args.onward.split(",") if b.strip()] or [0.0]
        if args.trace is not None:
            answers = answers_from_trace(args.trace)
        elif args.answers is not None:
            answers = read_answers(args.answers)
        else:
            parser.error("give an answers file or --trace")
        scores = score_bars(answers, bars, onward)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([s.to_json() for s in scores]))
    else:
        print(table(scores))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

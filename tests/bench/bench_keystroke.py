"""Keystroke cost: the document store's edit + incremental parse + syntax context.

Each row compares the full keystroke path (``DocumentStore.change`` with an
LSP range in UTF-16, then ``syntax_context`` at the cursor) against
tree-sitter's own incremental parse of the same edit (``tree.edit`` +
``parser.parse`` with precomputed offsets and points), measured in the same
run on the same file. Neither side's timing includes building its inputs:
the LSP change events and cursor positions are built beforehand, as pygls
builds them from the JSON message before the server's code runs. The two
sides alternate round by round, each timed in the thread's CPU time, and the
ratio is the median of the per-round ratios (see ``paired``).
A last row per size shows what a full re-parse per keystroke would cost.

The server's ``didChange`` also tells the acceptance bookkeeping
(``lsp_server.server.accepts.AcceptWatch``) about every edit. Extra rows per
size time the keystroke path with it, first with no accepted text followed in
the document (what nearly every keystroke costs), then with
``FOLLOWED`` accepts followed below the typing position (each edit moves them
all), against the same tree-sitter baseline in the same run.

Run: ``.venv/bin/python -m tests.bench.bench_keystroke`` (``--quick`` for a
smoke run).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

from lsprotocol.types import (
    Position,
    Range,
    TextDocumentContentChangeEvent,
    TextDocumentContentChangePartial,
)
from tree_sitter import Parser

from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import syntax_context
from lsp_server.observe.acceptance import Attribution, ShownSuggestion
from lsp_server.server.accepts import AcceptWatch
from tests.bench.rows import row

UNIT = '''
class Inventory{n}:
    """Items on hand, by name."""

    def __init__(self, owner: str, items: dict[str, int] | None = None) -> None:
        self.owner = owner
        self.items = dict(items or {{}})

    def add(self, name: str, count: int = 1) -> int:
        if count <= 0:
            raise ValueError(f"count must be positive, got {{count}}")
        self.items[name] = self.items.get(name, 0) + count
        return self.items[name]

    def total(self) -> int:
        result = 0
        for name, count in sorted(self.items.items()):
            result += count
        return result


def load_inventory{n}(rows: list[tuple[str, int]]) -> Inventory{n}:
    inv = Inventory{n}("loader")
    for name, count in rows:
        inv.add(name, count)
    return inv
'''

TYPED = "total_count"
#: accepts followed in the document in the bookkeeping row that has some
FOLLOWED = 16
#: full parses per timed round of the re-parse row: each is the same deterministic
#: work (over 100 ms on a 20,000-line file), so a few rounds of a few give a stable median
FULL_PARSES = 4


def python_source(lines: int) -> str:
    """Realistic Python of at least ``lines`` lines, made of repeated classes and functions."""
    parts: list[str] = []
    count = 0
    n = 0
    while count < lines:
        part = UNIT.format(n=n)
        parts.append(part)
        count += part.count("\n")
        n += 1
    return "".join(parts)


def _cursor(text: str, marker: str = "result = 0") -> tuple[int, int]:
    """A typing position in the middle of the file: the end of a line that strips to ``marker``."""
    lines = text.split("\n")
    middle = len(lines) // 2
    for i in range(middle, len(lines)):
        if lines[i].strip() == marker:
            return i, len(lines[i])
    raise ValueError("no typing position found")


def _measure(fn: Callable[[], None], repeats: int) -> float:
    """Median seconds of ``fn`` over ``repeats`` runs (this thread's CPU time)."""
    samples = []
    for _ in range(repeats):
        t0 = time.thread_time_ns()
        fn()
        samples.append((time.thread_time_ns() - t0) / 1e9)
    return statistics.median(samples)


def paired(
    ours: Callable[[], None], base: Callable[[], None], rounds: int
) -> tuple[float, float, float]:
    """Median seconds of ``ours`` and ``base`` and the median of their per-round ratio.

    The two run alternately, round after round, on the same edits, and each
    run is timed in this thread's CPU time: on a shared machine the time this
    process spends descheduled counts for neither. The order within a round
    alternates too, so cache warmth favours neither side. The ratio is taken
    per round (neighbours' load hits both runs of a round alike) and its
    median ignores the rounds a burst of load skewed.
    """
    ours_s: list[float] = []
    base_s: list[float] = []
    ratios: list[float] = []
    for k in range(rounds):
        first, second = (ours, base) if k % 2 == 0 else (base, ours)
        t0 = time.thread_time_ns()
        first()
        t1 = time.thread_time_ns()
        second()
        t2 = time.thread_time_ns()
        a, b = (t1 - t0, t2 - t1) if k % 2 == 0 else (t2 - t1, t1 - t0)
        ours_s.append(a / 1e9)
        base_s.append(b / 1e9)
        ratios.append(a / b if b else float("inf"))
    return statistics.median(ours_s), statistics.median(base_s), statistics.median(ratios)


def _bench_size(lines: int, repeats: int) -> list[dict[str, object]]:
    text = python_source(lines)
    rows = keystroke_rows(text, "file:///bench.py", "python", "result = 0", repeats, lines)
    for followed in (0, FOLLOWED):
        made = keystroke_rows(
            text, "file:///bench.py", "python", "result = 0", repeats, lines,
            followed=followed, keystroke_only=True,
        )[0]
        rows.append({**made, "name": f"keystroke {lines} lines + acceptance, {followed} followed"})
    return rows


def _follow_accepts(watch: AcceptWatch, text: str, uri: str, below: int, count: int) -> None:
    """``count`` accepts of whole lines after line ``below``, followed by ``watch``."""
    lines = text.split("\n")
    rows = [n for n in range(below + 1, len(lines)) if lines[n].strip()][:count]
    for n in rows:
        item = f"bench{n}"
        attribution = Attribution("exact", "python", "function_definition")
        watch.ledger.shown(ShownSuggestion(item, uri, n, 0, lines[n], attribution))
        watch.accept(item, None, "full")
    assert watch.ledger.pending == count


def keystroke_rows(
    text: str,
    uri: str,
    language_id: str,
    marker: str,
    repeats: int,
    lines: int,
    *,
    followed: int | None = None,
    keystroke_only: bool = False,
) -> list[dict[str, object]]:
    """Keystroke, full re-parse and context rows for ``text`` (typing after ``marker``).

    ``followed``: also run the acceptance bookkeeping of ``didChange``, with
    that many accepts followed in the document (None: the document store alone).
    ``keystroke_only``: the keystroke row alone; the full re-parses (most of
    the time spent here on a large file) are not run at all.
    """
    line, col = _cursor(text, marker)
    keys = len(TYPED)

    store = DocumentStore()
    doc = store.open(uri, language_id, 1, text)
    watch = AcceptWatch(store) if followed is not None else None
    if watch is not None and followed:
        _follow_accepts(watch, text, uri, line, followed)

    # Type TYPED, then delete it again with backspaces: the file ends as it
    # began. Each keystroke is a didChange event and the cursor after it, built
    # here once: in the server pygls builds them from the JSON message before
    # any of our code runs, as the baseline below gets its offsets ready-made.
    strokes: list[tuple[list[TextDocumentContentChangeEvent], Position]] = []
    for i, ch in enumerate(TYPED):
        at = Position(line=line, character=col + i)
        change = TextDocumentContentChangePartial(range=Range(start=at, end=at), text=ch)
        strokes.append(([change], Position(line=line, character=col + i + 1)))
    for i in range(keys, 0, -1):
        start = Position(line=line, character=col + i - 1)
        end = Position(line=line, character=col + i)
        change = TextDocumentContentChangePartial(range=Range(start=start, end=end), text="")
        strokes.append(([change], start))

    def store_keystrokes() -> None:
        for changes, cursor in strokes:
            store.change(doc.uri, doc.version + 1, changes)
            syntax_context(doc, cursor)

    def watched_keystrokes() -> None:
        assert watch is not None
        for changes, cursor in strokes:
            # as the didChange handler does around the document store
            before = watch.text_before(doc.uri, changes)
            store.change(doc.uri, doc.version + 1, changes)
            watch.changed(doc.uri, changes, before)
            syntax_context(doc, cursor)

    ours_keystrokes = store_keystrokes if watch is None else watched_keystrokes

    assert doc.spec is not None
    parser = Parser(doc.spec.language)
    data = bytearray(text.encode())
    tree = parser.parse(data)
    offset = doc.offset_at(Position(line=line, character=col))

    def tree_sitter_keystrokes() -> None:
        nonlocal tree
        for i, ch in enumerate(TYPED.encode()):
            at = offset + i
            data[at:at] = bytes([ch])
            tree.edit(at, at, at + 1, (line, col + i), (line, col + i), (line, col + i + 1))
            tree = parser.parse(data, tree)
        for i in range(keys, 0, -1):
            at = offset + i - 1
            del data[at]
            tree.edit(at, at + 1, at, (line, col + i - 1), (line, col + i), (line, col + i - 1))
            tree = parser.parse(data, tree)

    def full_parses() -> None:
        for _ in range(FULL_PARSES):
            parser.parse(data)

    at_marker = Position(line=line, character=col)

    def contexts() -> None:
        for _ in range(2 * keys):
            syntax_context(doc, at_marker)

    # warm both paths once, then alternate them round by round
    ours_keystrokes()
    tree_sitter_keystrokes()
    ours_t, base_t, ratio = paired(ours_keystrokes, tree_sitter_keystrokes, repeats)
    ours = ours_t / len(strokes) * 1e6
    base = base_t / len(strokes) * 1e6
    assert doc.text == text, "the benchmark's edits must leave the file unchanged"
    if watch is not None:
        # the followed lines moved with every edit and are where they started
        assert watch.ledger.pending == (followed or 0)
    keystroke = row(f"keystroke {lines} lines (edit+parse+context)", ours, base, "us", ratio=ratio)
    if keystroke_only:
        return [keystroke]
    full = _measure(full_parses, max(1, repeats // 8)) / FULL_PARSES * 1e6
    context = _measure(contexts, repeats) / len(strokes) * 1e6
    return [
        keystroke,
        row(f"full re-parse {lines} lines vs incremental keystroke", full, ours, "us"),
        row(f"syntax context alone {lines} lines", context, base, "us"),
    ]


def run(quick: bool = False) -> list[dict[str, object]]:
    """Benchmark rows for a small and a large file (500/2,000 lines when ``quick``)."""
    sizes = (500, 2_000) if quick else (5_000, 20_000)
    repeats = 3 if quick else 41
    rows: list[dict[str, object]] = []
    for lines in sizes:
        rows.extend(_bench_size(lines, repeats))
    small, large = rows[0], rows[5]
    ours_growth = _num(large["value"]) / _num(small["value"])
    base_growth = _num(large["baseline"]) / _num(small["baseline"])
    # tree-sitter's own incremental parse grows with the number of top-level
    # statements; what we add on top must not
    rows.append(
        row(f"keystroke growth {sizes[0]} -> {sizes[1]} lines", ours_growth, base_growth, "x")
    )
    context_growth = _num(rows[7]["value"]) / _num(rows[2]["value"])
    name = f"syntax context growth {sizes[0]} -> {sizes[1]} lines"
    rows.append(row(name, context_growth, 1.0, "x"))
    return rows


def _num(value: object) -> float:
    assert isinstance(value, int | float)
    return float(value)


def main() -> None:
    """Print the rows as a table."""
    rows = run(quick="--quick" in sys.argv)
    print(f"{'benchmark':58} {'value':>10} {'baseline':>10} {'ratio':>7}")
    for made in rows:
        print(
            f"{made['name']:58} {made['value']:>8} {made['unit']} "
            f"{made['baseline']:>8} {made['unit']} {made['ratio']:>7}"
        )


if __name__ == "__main__":
    main()

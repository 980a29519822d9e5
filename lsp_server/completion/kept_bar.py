"""What this developer kept moves the bar to show, and the pacing.

Where suggestions of a language, a scope kind or a source are rarely kept,
showing them costs the developer attention for little: the bar to show
rises (a higher ``min_probability`` through ``gate``'s ``BarSource`` seam)
and misses there wait longer before they ask (``MissThrottle``'s pacing).
Where they are kept, the bar comes down and the pacing quickens.

The evidence is the acceptance ledger's (``lsp_server.observe.acceptance``),
read as the change of its counts since the last look: each suggestion shown
counts as missed unless its accepted characters were still in the file
after the short window, or the developer typed it through by hand, which
count it as kept (shown and typed over is a reject; accepted and kept, or
typed as suggested, counts for). Kept suggestions are the kept characters
over the mean accepted length, so a group whose accepts are all kept
counts every accept, plus the suggestions typed through.

Bounded and decaying: per dimension value the tallies decay by ``DECAY``
per new suggestion of that value (they never exceed ``1 / (1 - DECAY)``),
a value is judged only after ``MIN_EVIDENCE`` (decayed) suggestions, and
its lean is clamped to [-1, 1]. The bar moves at most ``MAX_RAISE`` up and
``MAX_LOWER`` down; the pacing at most ``MAX_SLOWDOWN`` times slower and
``MAX_SPEEDUP`` faster. Of a suggestion's three values (language, scope
kind, source) the one kept least decides: a rarely kept source raises the
bar even in a well-kept language.

The record is this developer's: it is kept in a local SQLite file
(``cache.l2.kept_file``, through ``LocalKept``), never in a shared tier,
and a new window starts from what the last one learned.
``acceptance.learnBar`` turns it off.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from cache.l2.kept_file import KeptFile, KeptRow
from lsp_server.completion.gate import BarSource, ShowBar

#: the tallies keep this much of themselves per new suggestion of their value
DECAY = 0.98
#: decayed suggestions a value needs before it moves anything
MIN_EVIDENCE = 12.0
#: the kept share that leaves the bar where it is configured
KEPT_TARGET = 0.3
#: a kept share this far above the target lowers the bar fully
KEPT_HIGH = 0.6
#: the most the bar's ``min_probability`` rises, and falls
MAX_RAISE = 0.25
MAX_LOWER = 0.1
#: moved bars remembered (by bar and lean) before the memo starts again
MOVED_BARS_KEPT = 64
#: the most the pacing slows down (times the delay) and speeds up
MAX_SLOWDOWN = 2.0
MAX_SPEEDUP = 0.75
#: seconds between two looks at the ledger
LOOK_SECONDS = 1.0
#: seconds between two saves of a changed record
SAVE_SECONDS = 60.0
#: the three dimensions a suggestion is attributed by
DIMENSIONS = ("language", "scope", "source")


class Counts(Protocol):
    """What the record reads of one group's acceptance counts (``AcceptanceCounts``)."""

    shown: int
    accepted: int
    accepted_chars: int
    retained_short: int
    typed_through: int


class Ledger(Protocol):
    """The acceptance ledger, as the record reads it."""

    def by(self, dimension: str) -> Mapping[str, Counts]:
        """The cumulative counts grouped by ``dimension``."""
        ...


@dataclass(slots=True)
class Tally:
    """Decayed suggestions kept and missed of one dimension value."""

    kept: float = 0.0
    missed: float = 0.0

    def add(self, kept: float, missed: float) -> None:
        """Count ``kept + missed`` new suggestions, each decaying those before it."""
        count = kept + missed
        if count <= 0:
            return
        fade = DECAY**count
        # n suggestions in a row weigh (1 - DECAY^n) / (1 - DECAY) together, shared pro rata
        weight = (1.0 - fade) / (1.0 - DECAY) / count
        self.kept = self.kept * fade + kept * weight
        self.missed = self.missed * fade + missed * weight

    def lean(self) -> float:
        """+1: rarely kept (raise the bar), -1: mostly kept (lower it), 0: no verdict."""
        total = self.kept + self.missed
        if total < MIN_EVIDENCE:
            return 0.0
        share = self.kept / total
        if share < KEPT_TARGET:
            return (KEPT_TARGET - share) / KEPT_TARGET
        return -min(1.0, (share - KEPT_TARGET) / (KEPT_HIGH - KEPT_TARGET))


@dataclass(frozen=True, slots=True)
class _Seen:
    shown: int
    accepted: int
    accepted_chars: int
    retained: int
    typed_through: int


class KeptRecord:
    """Per language, scope kind and source: how much of what was shown was kept."""

    def __init__(
        self, ledger: Ledger | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._ledger = ledger
        self._clock = clock
        self._tallies: dict[tuple[str, str], Tally] = {}
        self._seen: dict[tuple[str, str], _Seen] = {}
        self._next_look = 0.0
        #: leans already worked out since the tallies last changed (the hit path asks)
        self._leans: dict[tuple[str, str, str], float] = {}
        #: the record changed since it was last saved
        self.dirty = False

    # -- learning -------------------------------------------------------------------------

    def look(self, *, now_or_never: bool = False) -> None:
        """Read what the ledger counted since the last look.

        At most once per ``LOOK_SECONDS`` unless ``now_or_never`` (the last
        look, before the record is saved for good).
        """
        now = self._clock()
        if self._ledger is None or (now < self._next_look and not now_or_never):
            return
        self._next_look = now + LOOK_SECONDS
        for dimension in DIMENSIONS:
            for value, counts in self._ledger.by(dimension).items():
                self._learn(dimension, value, counts)

    def _learn(self, dimension: str, value: str, counts: Counts) -> None:
        now = _Seen(
            counts.shown,
            counts.accepted,
            counts.accepted_chars,
            counts.retained_short,
            counts.typed_through,
        )
        before = self._seen.get((dimension, value), _Seen(0, 0, 0, 0, 0))
        self._seen[(dimension, value)] = now
        shown = now.shown - before.shown
        retained = now.retained - before.retained
        typed = now.typed_through - before.typed_through
        if shown <= 0 and retained <= 0 and typed <= 0:
            return
        mean_accepted = now.accepted_chars / now.accepted if now.accepted else 0.0
        kept = retained / mean_accepted if mean_accepted > 0 else 0.0
        kept += typed
        # the kept count lags the shown one by the short window: never below zero
        missed = max(0.0, shown - kept)
        self.tally(dimension, value).add(kept, missed)
        self._leans.clear()
        self.dirty = True

    def tally(self, dimension: str, value: str) -> Tally:
        """The tallies of one dimension value (made empty when missing)."""
        found = self._tallies.get((dimension, value))
        if found is None:
            found = self._tallies[(dimension, value)] = Tally()
        return found

    # -- using it -------------------------------------------------------------------------

    def lean(self, language: str, scope: str, source: str) -> float:
        """The lean of a suggestion: that of its least kept value, in [-1, 1]."""
        self.look()
        known = self._leans.get((language, scope, source))
        if known is not None:
            return known
        leans = [
            found.lean()
            for key in (("language", language), ("scope", scope), ("source", source))
            if (found := self._tallies.get(key)) is not None
        ]
        lean = self._leans[(language, scope, source)] = max(leans, default=0.0)
        return lean

    def bar(self, base: BarSource) -> BarSource:
        """``base`` moved by the lean: the seam ``gate`` takes its bar through."""
        #: bars already moved, by the bar and its lean: a hit asks for one, and
        #: building it again (``replace``) cost more than the rest of the bar
        moved_bars: dict[tuple[ShowBar, float], ShowBar] = {}

        def source(language: str, scope: str, origin: str) -> ShowBar:
            bar = base(language, scope, origin)
            lean = self.lean(language, scope, origin)
            if lean == 0.0 or bar.min_probability <= 0.0:
                return bar  # confidence off (or unknown): nothing to move
            known = moved_bars.get((bar, lean))
            if known is not None:
                return known
            step = MAX_RAISE * lean if lean > 0 else MAX_LOWER * lean
            onward = bar.min_onward_probability
            if len(moved_bars) >= MOVED_BARS_KEPT:
                moved_bars.clear()  # leans drift with every tally: keep the recent ones
            found = moved_bars[(bar, lean)] = replace(
                bar,
                min_probability=_moved(bar.min_probability, step),
                min_onward_probability=_moved(onward, step) if onward > 0.0 else 0.0,
            )
            return found

        return source

    def pacing(self, language: str) -> float:
        """How many times its usual delay a miss in ``language`` waits before it asks."""
        self.look()
        found = self._tallies.get(("language", language))
        lean = found.lean() if found is not None else 0.0
        if lean >= 0:
            return 1.0 + (MAX_SLOWDOWN - 1.0) * lean
        return 1.0 + (1.0 - MAX_SPEEDUP) * lean

    # -- kept across windows --------------------------------------------------------------

    def rows(self) -> list[KeptRow]:
        """The record as rows for ``KeptFile.save``."""
        return [
            KeptRow(dimension, value, tally.kept, tally.missed)
            for (dimension, value), tally in sorted(self._tallies.items())
        ]

    def restore(self, rows: Iterable[KeptRow]) -> None:
        """Start from a saved record (what the last window learned)."""
        for row in rows:
            if row.dimension in DIMENSIONS and row.kept >= 0 and row.missed >= 0:
                bound = 1.0 / (1.0 - DECAY)
                self._tallies[(row.dimension, row.value)] = Tally(
                    min(bound, row.kept), min(bound, row.missed)
                )
        self._leans.clear()


class LocalKept:
    """A record and its local file: read at start, written now and then and at the end.

    The file's I/O runs on a worker thread, never on the event loop.
    """

    def __init__(self, record: KeptRecord, file: KeptFile | None) -> None:
        self.record = record
        self.file = file
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Load the last window's record, then save the changes every ``SAVE_SECONDS``."""
        if self.file is not None and self._task is None:
            self._task = asyncio.ensure_future(self._run(self.file))

    async def _run(self, file: KeptFile) -> None:
        self.record.restore(await asyncio.to_thread(file.load))
        while True:
            await asyncio.sleep(SAVE_SECONDS)
            await self.save()

    async def save(self) -> None:
        """Write the record if it changed since the last save."""
        if self.file is None or not self.record.dirty:
            return
        self.record.dirty = False
        await asyncio.to_thread(self.file.save, self.record.rows())

    async def aclose(self) -> None:
        """Stop the saves and write what changed (shutdown)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        self.record.look(now_or_never=True)
        await self.save()


def _moved(probability: float, step: float) -> float:
    """A bar's probability moved by ``step``, within what a bar can be."""
    return min(0.95, max(0.0, probability + step))

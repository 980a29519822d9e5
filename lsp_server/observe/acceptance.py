"""What the developer kept: suggestions shown, accepted, and still in the file later.

One ``AcceptanceLedger`` per server (and one per recorded session the tuning
kit reads back). It is told three things:

* ``shown``: a suggestion went out (its id, where, its text, and its
  ``Attribution``: source, language, scope kind). The rest of the last one
  shown in a document, shown again further on its line after the user typed
  its start, is the same suggestion typed through: it can be accepted under
  its new id, and counts where it was first shown, once (one suggestion
  typed through over twenty keys is one suggestion, not twenty unkept ones).
  Typed through by hand for half its first line, it counts as
  ``typed_through``: right, though never accepted;
* ``accept``: the editor accepted it, in full or a part (a word, a line):
  the newly accepted characters start to be followed (``FollowedText``);
* ``edit`` / ``replaced`` / ``closed``: what happens to the documents
  afterwards. A document with neither a suggestion shown nor accepted text
  being followed costs one dictionary lookup per change; one that has costs
  a constant per followed accept (at most ``PENDING_KEPT`` of them, the
  oldest counted early).

What an accept inserted is found from the edit that inserted it, not taken
from the suggestion whole: the last edit of a document with suggestions
shown is remembered (a reference, a constant cost), and an accept whose
text that edit ends with counts only what the edit brought. Characters of
the suggestion the user had typed by hand before accepting (Neovim's ghost
text, VS Code's held item: both report the whole item accepted) are not
accepted characters. An accept reported before its edit arrives (a client
may send the command before it flushes a debounced ``didChange``) waits for
that edit, up to ``AWAITED_EDITS`` edits of the document, and is followed
from where the edit puts it.

After the short and the long window (``acceptance.shortWindowSeconds``, 30 s,
and ``longWindowSeconds``, 120 s) ``measure_due`` counts how many accepted
characters are still there (``kept_chars``). Time comes from the injected
``clock``; nothing here sleeps or schedules: the owner asks ``due()`` when
the next count is and calls ``measure_due`` then (the server with one loop
timer, the kit in trace time), so tests drive it with a fake clock.

The counts are kept per attribution and summed in ``snapshot`` overall and
by source, language and scope kind. ``muted`` tells the completion pipeline
to stop serving from a source whose latest suggestions were kept too little
(``acceptance.muteBelow``; off by default).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from lsp_server.observe.retained import (
    FollowedText,
    Point,
    Units,
    advance,
    common_ends,
    extent,
    kept_chars,
    locate,
    measured_length,
    utf16_units,
)
from lsp_server.observe.stats import percentile

logger = logging.getLogger(__name__)

#: the share of its first line a suggestion must be typed through by hand to
#: count as right (``AcceptanceCounts.typed_through``)
TYPED_THROUGH_SHARE = 0.5
#: accepts followed at once; past it the oldest is counted early. Each costs
#: about a microsecond on an edit that moves it (a line break above it) and a
#: third of that on one that does not: 64 keep an edit under about 80 us on
#: a loaded two-core machine, and are one accept every two seconds for the
#: whole long window
PENDING_KEPT = 64
#: shown suggestions remembered for their accepts
SHOWN_KEPT = 256
#: while a source is muted, one suggestion in this many still goes out, so
#: that its record can recover
PROBE_EVERY = 10
#: how often a muted / not muted verdict is recomputed, seconds
VERDICT_SECONDS = 1.0
#: latency samples kept for the shown / accepted percentiles
LATENCY_KEPT = 2048
#: accept kinds the editors report
KINDS = ("full", "word", "line")
#: edits of its document an accept reported before its edit waits through for
#: that edit; past them it is followed from where the suggestion was shown
AWAITED_EDITS = 16

Clock = Callable[[], float]
#: reads a document's text between two points, at most ``limit`` characters;
#: None when the document is not open
RangeReader = Callable[[str, Point, Point, int], "str | None"]


@dataclass(frozen=True, slots=True)
class Attribution:
    """Where a suggestion came from: the stats are grouped by each of these."""

    source: str
    language: str
    scope: str


@dataclass(slots=True)
class AcceptanceCounts:
    """The acceptance fields of one group (overall, a source, a language, a scope kind)."""

    shown: int = 0
    accepted: int = 0
    accepted_chars: int = 0
    retained_short: int = 0
    retained_long: int = 0
    #: accepted characters whose short / long count is done (the rates' denominators)
    measured_short: int = 0
    measured_long: int = 0
    #: suggestions the user typed by hand through at least ``TYPED_THROUGH_SHARE``
    #: of their first line (right, though never accepted)
    typed_through: int = 0

    def add(self, other: AcceptanceCounts) -> None:
        """Add ``other``'s counts to these."""
        self.shown += other.shown
        self.typed_through += other.typed_through
        self.accepted += other.accepted
        self.accepted_chars += other.accepted_chars
        self.retained_short += other.retained_short
        self.retained_long += other.retained_long
        self.measured_short += other.measured_short
        self.measured_long += other.measured_long

    def to_json(self) -> dict[str, int]:
        """The JSON object ``scopecache/stats`` shows for the group."""
        return {
            "shown": self.shown,
            "accepted": self.accepted,
            "acceptedChars": self.accepted_chars,
            "retainedChars30s": self.retained_short,
            "retainedChars120s": self.retained_long,
            "measuredChars30s": self.measured_short,
            "measuredChars120s": self.measured_long,
            "typedThrough": self.typed_through,
        }


@dataclass(frozen=True, slots=True)
class ShownSuggestion:
    """A suggestion that went out: where it would be inserted, and what it is."""

    item_id: str
    uri: str
    line: int
    character: int
    text: str
    attribution: Attribution
    latency_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class AcceptOutcome:
    """What one accept report added: characters newly accepted, and whether it was the first."""

    chars: int
    first: bool


@dataclass(slots=True, eq=False)
class _Record:
    """One shown suggestion as the mute gate judges it."""

    shown_at: float
    chars: int
    kept: int = 0
    #: accepts of it whose short window has not passed yet
    open: int = 0
    #: where it was first shown on its line, and its first line's length, both
    #: in the documents' position units (as the editor reports the cursor)
    character: int = 0
    line_units: int = 0
    #: counted as typed through (``AcceptanceCounts.typed_through``)
    typed_through: bool = False

    def settled(self, now: float, short: float) -> bool:
        return self.open == 0 and now >= self.shown_at + short


@dataclass(slots=True, eq=False)
class _Shown:
    suggestion: ShownSuggestion
    record: _Record
    #: the document's edit count when shown or last accepted: an edit after it
    #: may be the next accept's
    seen: int
    #: characters of the text accepted so far (partial accepts add up)
    accepted: int = 0


class _Edit(NamedTuple):
    """One edit as it came: ``[start, end)`` replaced by ``text``; ``seq`` counts them."""

    seq: int
    start: Point
    end: Point
    text: str


@dataclass(slots=True, eq=False)
class _Awaited:
    """An accept reported before its edit: what it accepts, and how long it waits."""

    text: str
    #: characters of ``text`` accepted before this accept, and with it
    before: int
    upto: int
    edits_left: int = AWAITED_EDITS


@dataclass(slots=True, eq=False)
class _Pending:
    """Accepted text being followed until its windows are counted."""

    seq: int
    uri: str
    where: FollowedText
    text: str
    attribution: Attribution
    accepted_at: float
    #: when the long window's count is due (both windows are fixed at the accept)
    long_due: float
    record: _Record
    #: windows counted so far (0, 1; 2 = done)
    stage: int = 0
    #: set while the accept waits for its edit; ``where`` is then the
    #: suggestion's position (empty), followed through the edits before it
    awaited: _Awaited | None = None


@dataclass(slots=True)
class _Verdict:
    until: float = 0.0
    muted: bool = False
    probes: int = 0


def _listed(lists: dict[str, list[_Pending]], uri: str) -> list[_Pending]:
    """The list of ``uri`` in ``lists``, made when missing."""
    listed = lists.get(uri)
    if listed is None:
        listed = lists[uri] = []
    return listed


def _unlisted(lists: dict[str, list[_Pending]], pending: _Pending) -> None:
    """``pending`` taken out of its document's list in ``lists`` (dropped when empty)."""
    listed = lists.get(pending.uri)
    if listed is not None and pending in listed:
        listed.remove(pending)
        if not listed:
            del lists[pending.uri]


def _chars_in(text: str, count: int, units: Units) -> int:
    """How many characters of ``text`` make up its first ``count`` position units (clamped)."""
    if text.isascii():
        return max(0, min(count, len(text)))
    for index in range(len(text)):
        if units(text[: index + 1]) > count:
            return index
    return len(text)


def _utf16_index(text: str, units: int) -> int:
    """The ``str`` index after the first ``units`` UTF-16 code units of ``text`` (clamped)."""
    if text.isascii():
        return max(0, min(units, len(text)))
    count = 0
    for index, ch in enumerate(text):
        if count >= units:
            return index
        count += 2 if ord(ch) > 0xFFFF else 1
    return len(text)


@dataclass
class _Settings:
    short: float = 30.0
    long: float = 120.0
    mute_below: float = 0.0
    mute_over: int = 50


class AcceptanceLedger:
    """Suggestions shown and accepted, the accepted text followed, its counts by group."""

    def __init__(
        self,
        read: RangeReader,
        *,
        clock: Clock = time.monotonic,
        units: Units = utf16_units,
        short_window: float = 30.0,
        long_window: float = 120.0,
        mute_below: float = 0.0,
        mute_over: int = 50,
        pending_kept: int = PENDING_KEPT,
    ) -> None:
        self._read = read
        self._clock = clock
        #: the length of a text in the documents' position units
        self.units = units
        self._settings = _Settings()
        self._pending_kept = pending_kept
        self._groups: dict[Attribution, AcceptanceCounts] = {}
        self._shown: OrderedDict[str, _Shown] = OrderedDict()
        self._pending: OrderedDict[int, _Pending] = OrderedDict()
        self._by_uri: dict[str, list[_Pending]] = {}
        #: accepts reported before their edit, per document, until it comes
        self._awaiting: dict[str, list[_Pending]] = {}
        self._due: list[tuple[float, int, _Pending]] = []
        self._seq = itertools.count(1)
        self._recent: dict[str, deque[_Record]] = {}
        #: remembered shown suggestions per document, and each such document's last edit
        self._shown_in: Counter[str] = Counter()
        #: the id of the last suggestion shown in each such document
        self._last_shown: dict[str, str] = {}
        self._last_edit: dict[str, _Edit] = {}
        self._edit_seq = itertools.count(1)
        self._verdicts: dict[str, _Verdict] = {}
        self.kinds: Counter[str] = Counter()
        self.muted_count: Counter[str] = Counter()
        self._shown_latency: deque[float] = deque(maxlen=LATENCY_KEPT)
        self._accepted_latency: deque[float] = deque(maxlen=LATENCY_KEPT)
        self.configure(
            short_window=short_window,
            long_window=long_window,
            mute_below=mute_below,
            mute_over=mute_over,
        )

    def __repr__(self) -> str:
        return (
            f"AcceptanceLedger({len(self._shown)} shown kept, {len(self._pending)} pending, "
            f"windows={self._settings.short:g}/{self._settings.long:g}s)"
        )

    def configure(
        self,
        *,
        short_window: float,
        long_window: float,
        mute_below: float,
        mute_over: int,
    ) -> None:
        """New windows apply to accepts from now on; a new ``mute_over`` to the next verdict."""
        s = self._settings
        s.short, s.long = short_window, max(short_window, long_window)
        if (mute_below, mute_over) != (s.mute_below, s.mute_over):
            self._verdicts.clear()
        s.mute_below, s.mute_over = mute_below, mute_over

    @property
    def windows(self) -> tuple[float, float]:
        """The short and the long window, seconds."""
        return self._settings.short, self._settings.long

    # -- what the editor and the server report ------------------------------------------

    def shown(self, suggestion: ShownSuggestion) -> None:
        """A suggestion went out (or the rest of the last one, typed through)."""
        uri = suggestion.uri
        earlier = self._continued(suggestion)
        if earlier is not None:
            # its accepts count where the suggestion was first shown
            suggestion = replace(suggestion, attribution=earlier.suggestion.attribution)
            record = earlier.record
            self._count_typed(suggestion, record)
        else:
            text = suggestion.text
            record = _Record(
                shown_at=self._clock(),
                chars=len(text),
                character=suggestion.character,
                line_units=self.units(text.partition("\n")[0]),
            )
            self._count_shown(suggestion.attribution, record)
        last = self._last_edit.get(uri)
        replaced = self._shown.pop(suggestion.item_id, None)
        if replaced is not None:
            self._unshown(replaced.suggestion.uri)
        self._shown[suggestion.item_id] = _Shown(suggestion, record, last.seq if last else 0)
        self._shown_in[uri] += 1
        self._last_shown[uri] = suggestion.item_id
        while len(self._shown) > SHOWN_KEPT:
            _item, oldest = self._shown.popitem(last=False)
            self._unshown(oldest.suggestion.uri)
        if earlier is None:
            self._shown_latency.append(suggestion.latency_ms)

    def _continued(self, suggestion: ShownSuggestion) -> _Shown | None:
        """The document's last suggestion, if ``suggestion`` is its rest typed through.

        Whatever served the rest (a typed-through hit, the same stream), it
        is the suggestion first shown, and counts where that one did.
        """
        last_id = self._last_shown.get(suggestion.uri)
        last = self._shown.get(last_id) if last_id is not None else None
        if last is None or last_id == suggestion.item_id:
            return None
        before = last.suggestion
        typed_units = suggestion.character - before.character
        if suggestion.line != before.line or typed_units <= 0:
            return None
        typed = _chars_in(before.text, typed_units, self.units)
        if (
            before.text[typed:] != suggestion.text
            or "\n" in before.text[:typed]
            or self.units(before.text[:typed]) != typed_units
        ):
            return None
        return last

    def _count_typed(self, rest: ShownSuggestion, record: _Record) -> None:
        """Count the suggestion as typed through once the user typed enough of it by hand.

        ``rest`` is what is left of it, shown further on its line: the user
        typed what it suggested up to there. Half its first line typed as
        suggested is the sign that it was right, though it was never
        accepted (a developer who types along rather than pressing Tab).
        """
        if record.typed_through or record.line_units <= 0:
            return
        if rest.character - record.character >= TYPED_THROUGH_SHARE * record.line_units:
            record.typed_through = True
            self._group(rest.attribution).typed_through += 1

    def _count_shown(self, attribution: Attribution, record: _Record) -> None:
        """One more suggestion shown in ``attribution``'s group and its source's recent ones."""
        self._group(attribution).shown += 1
        recent = self._recent.get(attribution.source)
        if recent is None:
            recent = self._recent[attribution.source] = deque(
                maxlen=self._settings.mute_over + SHOWN_KEPT
            )
        elif recent.maxlen != self._settings.mute_over + SHOWN_KEPT:
            recent = self._recent[attribution.source] = deque(
                recent, maxlen=self._settings.mute_over + SHOWN_KEPT
            )
        recent.append(record)

    def _unshown(self, uri: str) -> None:
        self._shown_in[uri] -= 1
        if self._shown_in[uri] <= 0:
            del self._shown_in[uri]
            self._last_shown.pop(uri, None)
            self._last_edit.pop(uri, None)

    def accept(
        self, item_id: str, length: int | None = None, kind: str = "full"
    ) -> AcceptOutcome | None:
        """The editor accepted ``item_id`` up to ``length`` UTF-16 code units (None: all).

        Partial accepts of one suggestion add up: each call accepts what lies
        between the previous length and this one, and follows it from now on.
        None for an unknown (or forgotten) item.
        """
        shown = self._shown.get(item_id)
        if shown is None:
            return None
        suggestion = shown.suggestion
        text = suggestion.text
        upto = len(text) if length is None else _utf16_index(text, length)
        if upto <= shown.accepted:
            return AcceptOutcome(0, first=False)  # reported twice, or less than before
        before = shown.accepted
        origin = (suggestion.line, suggestion.character)
        counts = self._group(suggestion.attribution)
        first = before == 0
        if first:
            counts.accepted += 1
            self._accepted_latency.append(suggestion.latency_ms)
        shown.accepted = upto
        self.kinds[kind if kind in KINDS else "full"] += 1
        uri = suggestion.uri
        edit = self._last_edit.get(uri)
        typed = None
        if edit is not None and edit.seq > shown.seen:
            typed = self._typed_before(text, upto, origin, edit)
            if typed is not None:
                shown.seen = edit.seq
        awaited = None
        if typed is not None:  # its edit came first: what that edit brought
            begin = max(before, typed)
            start = advance(origin, extent(text[:begin], self.units))
            end = advance(origin, extent(text[:upto], self.units))
            part = text[begin:upto]
        else:
            part = text[before:upto]
            start = advance(origin, extent(text[:before], self.units))
            end = advance(start, extent(part, self.units))
            if self._read(uri, start, end, len(part)) != part:
                awaited = _Awaited(text, before, upto)
        if awaited is not None:  # reported before its edit: wait for it at the suggestion
            where = FollowedText.at(origin, origin)
        else:
            where = FollowedText.at(start, end)
            counts.accepted_chars += len(part)
        self._follow(uri, where, part, suggestion.attribution, shown, awaited)
        return AcceptOutcome(len(part), first)

    def _typed_before(self, text: str, upto: int, origin: Point, edit: _Edit) -> int | None:
        """Characters of ``text[:upto]`` in the document before ``edit`` brought the rest.

        None when ``edit`` is not the accept's: it must insert the end of
        ``text[:upto]`` right after the part already there from ``origin``.
        What it replaced there (an editor that replaces the typed prefix of a
        held item with the item's text) was typed as well.
        """
        inserted = edit.text
        if (
            not inserted
            or len(inserted) > upto
            or not text.startswith(inserted, upto - len(inserted))
        ):
            return None
        there = upto - len(inserted)
        if edit.start != advance(origin, extent(text[:there], self.units)):
            return None
        if edit.end == edit.start:
            return there
        if edit.end[0] != edit.start[0]:
            return None
        return there + _chars_in(inserted, edit.end[1] - edit.start[1], self.units)

    def _follow(
        self,
        uri: str,
        where: FollowedText,
        text: str,
        attribution: Attribution,
        shown: _Shown,
        awaited: _Awaited | None,
    ) -> None:
        while len(self._pending) >= self._pending_kept:
            _seq, oldest = next(iter(self._pending.items()))
            self._finish(oldest)  # counted early rather than forgotten
        now = self._clock()
        shown.record.open += 1
        short, long = self._settings.short, self._settings.long
        pending = _Pending(
            next(self._seq), uri, where, text, attribution, now, now + long, shown.record
        )
        pending.awaited = awaited
        self._pending[pending.seq] = pending
        _listed(self._awaiting if awaited is not None else self._by_uri, uri).append(pending)
        heapq.heappush(self._due, (now + short, pending.seq, pending))

    # -- what happens to the documents ---------------------------------------------------

    def watching(self, uri: str) -> bool:
        """Whether accepted text of ``uri`` is being followed (or waits for its edit)."""
        return uri in self._by_uri or uri in self._awaiting

    def expecting(self, uri: str) -> bool:
        """Whether the edits of ``uri`` matter: accepted text followed, or suggestions shown."""
        return uri in self._by_uri or uri in self._shown_in or uri in self._awaiting

    def edit(self, uri: str, start: Point, end: Point, text: str) -> None:
        """``[start, end)`` of ``uri`` was replaced by ``text``."""
        if uri in self._shown_in:
            self._last_edit[uri] = _Edit(next(self._edit_seq), start, end, text)
        followed = self._by_uri.get(uri)
        waiting = self._awaiting.get(uri)
        if not followed and not waiting:
            return
        reach = extent(text, self.units)
        size = len(text)
        for pending in followed or ():
            if pending.where.edit(start, end, reach, size):
                # the whole of it replaced: compared by content, not adopted
                near = pending.where.start[0] - start[0]
                pending.where.found(start, text, locate(pending.text, text, near), self.units)
        for pending in list(waiting or ()):  # after: one that finds its edit here is placed
            self._await(pending, start, end, text, reach)

    def _await(
        self, pending: _Pending, start: Point, end: Point, text: str, reach: tuple[int, int]
    ) -> None:
        """One edit while ``pending`` waits for its own, which it may be."""
        awaited = pending.awaited
        assert awaited is not None
        origin = pending.where.start
        typed = self._typed_before(awaited.text, awaited.upto, origin, _Edit(0, start, end, text))
        if typed is None:
            pending.where.edit(
                start, end, reach, len(text)
            )  # the origin moves with what is before it
            awaited.edits_left -= 1
            if awaited.edits_left <= 0:
                self._give_up(pending)
            return
        begin = max(awaited.before, typed)
        units = self.units
        pending.where = FollowedText.at(
            advance(origin, extent(awaited.text[:begin], units)),
            advance(origin, extent(awaited.text[: awaited.upto], units)),
        )
        pending.text = awaited.text[begin : awaited.upto]
        self._followed_now(pending)

    def _give_up(self, pending: _Pending) -> None:
        """``pending``'s edit never came: follow it from where the suggestion put it."""
        awaited = pending.awaited
        assert awaited is not None
        origin = pending.where.start
        start = advance(origin, extent(awaited.text[: awaited.before], self.units))
        pending.where = FollowedText.at(start, advance(start, extent(pending.text, self.units)))
        self._followed_now(pending)

    def _followed_now(self, pending: _Pending) -> None:
        """``pending`` no longer waits: its characters count as accepted, its edits are followed."""
        _unlisted(self._awaiting, pending)
        pending.awaited = None
        _listed(self._by_uri, pending.uri).append(pending)
        self._group(pending.attribution).accepted_chars += len(pending.text)

    def replaced(self, uri: str, before: str, after: str) -> None:
        """The whole text of ``uri`` was replaced: follow it as the one edit between the two."""
        if not self.expecting(uri):
            return
        head, tail = common_ends(before, after)
        start = extent(before[:head], self.units)
        end = extent(before[: len(before) - tail], self.units)
        self.edit(uri, start, end, after[head : len(after) - tail])

    def closed(self, uri: str) -> None:
        """``uri`` is about to close: its accepted text is counted now, for every window."""
        for pending in [*self._by_uri.get(uri, ()), *self._awaiting.get(uri, ())]:
            self._finish(pending)

    # -- counting -------------------------------------------------------------------------

    def due(self) -> float | None:
        """When the next count is due (on ``clock``), or None."""
        while self._due and self._due[0][2].seq not in self._pending:
            heapq.heappop(self._due)  # finished early
        return self._due[0][0] if self._due else None

    def measure_due(self, now: float | None = None) -> int:
        """Count every window that has passed by ``now``; returns how many."""
        if now is None:
            now = self._clock()
        counted = 0
        while self._due and self._due[0][0] <= now:
            _when, seq, pending = heapq.heappop(self._due)
            if seq not in self._pending:
                continue
            self._count(pending)
            counted += 1
            if pending.stage == 1:
                heapq.heappush(self._due, (pending.long_due, seq, pending))
            else:
                self._drop(pending)
        return counted

    def _finish(self, pending: _Pending) -> None:
        while pending.stage < 2:
            self._count(pending)
        self._drop(pending)

    def _held(self, pending: _Pending) -> str | None:
        """What the pieces of ``pending`` hold now, each read up to ``measured_length``."""
        bound = measured_length(pending.text)
        parts = []
        for piece in pending.where.pieces:
            part = self._read(pending.uri, piece.start, piece.end, bound)
            if part is None:
                return None
            parts.append(part)
        return "".join(parts)

    def _count(self, pending: _Pending) -> None:
        if pending.awaited is not None:
            self._give_up(pending)
        now = self._held(pending)
        kept = kept_chars(pending.text, now) if now is not None else 0
        counts = self._group(pending.attribution)
        if pending.stage == 0:
            counts.retained_short += kept
            counts.measured_short += len(pending.text)
            pending.record.kept += kept
            pending.record.open -= 1
        else:
            counts.retained_long += kept
            counts.measured_long += len(pending.text)
        pending.stage += 1

    def _drop(self, pending: _Pending) -> None:
        self._pending.pop(pending.seq, None)
        _unlisted(self._awaiting if pending.awaited is not None else self._by_uri, pending)

    # -- using it -------------------------------------------------------------------------

    def muted(self, source: str) -> bool:
        """Whether a suggestion from ``source`` should be withheld now (``muteBelow``).

        Judged over the source's latest ``muteOver`` settled suggestions
        (shown at least the short window ago, every accept of them counted):
        muted when the characters kept after the short window are less than
        ``muteBelow`` of the characters shown. One suggestion in
        ``PROBE_EVERY`` of a muted source still goes out.
        """
        if self._settings.mute_below <= 0.0:
            return False
        now = self._clock()
        verdict = self._verdicts.get(source)
        if verdict is None:
            verdict = self._verdicts[source] = _Verdict()
        if now >= verdict.until:
            verdict.muted = self._judge(source, now)
            verdict.until = now + VERDICT_SECONDS
        if not verdict.muted:
            return False
        verdict.probes += 1
        if verdict.probes % PROBE_EVERY == 0:
            return False
        self.muted_count[source] += 1
        return True

    def _judge(self, source: str, now: float) -> bool:
        share = self._kept_share(source, now)
        return share is not None and share < self._settings.mute_below

    def kept_share(self, source: str) -> float | None:
        """The kept share of shown characters ``muted`` judges ``source`` by (None: too few)."""
        return self._kept_share(source, self._clock())

    def _kept_share(self, source: str, now: float) -> float | None:
        s = self._settings
        shown = kept = judged = 0
        for record in reversed(self._recent.get(source, ())):
            if not record.settled(now, s.short):
                continue
            shown += record.chars
            kept += record.kept
            judged += 1
            if judged == s.mute_over:
                break
        if judged < s.mute_over or shown == 0:
            return None
        return kept / shown

    # -- reading --------------------------------------------------------------------------

    def _group(self, attribution: Attribution) -> AcceptanceCounts:
        counts = self._groups.get(attribution)
        if counts is None:
            counts = self._groups[attribution] = AcceptanceCounts()
        return counts

    def totals(self) -> AcceptanceCounts:
        """Every group added up."""
        total = AcceptanceCounts()
        for counts in self._groups.values():
            total.add(counts)
        return total

    def by(self, dimension: str) -> dict[str, AcceptanceCounts]:
        """The counts grouped by ``source``, ``language`` or ``scope``."""
        out: dict[str, AcceptanceCounts] = {}
        for attribution, counts in self._groups.items():
            key = getattr(attribution, dimension)
            if key not in out:
                out[key] = AcceptanceCounts()
            out[key].add(counts)
        return dict(sorted(out.items()))

    @property
    def pending(self) -> int:
        """Accepts whose windows are not all counted yet."""
        return len(self._pending)

    def snapshot(self) -> dict[str, Any]:
        """The ``acceptance`` object of ``scopecache/stats``."""
        out: dict[str, Any] = self.totals().to_json()
        out["bySource"] = {k: v.to_json() for k, v in self.by("source").items()}
        out["byLanguage"] = {k: v.to_json() for k, v in self.by("language").items()}
        out["byScope"] = {k: v.to_json() for k, v in self.by("scope").items()}
        out["byKind"] = {kind: self.kinds.get(kind, 0) for kind in KINDS}
        out["pending"] = self.pending
        out["windowsSeconds"] = list(self.windows)
        out["latencyMs"] = {
            "shownP50": round(percentile(self._shown_latency, 50), 3),
            "acceptedP50": round(percentile(self._accepted_latency, 50), 3),
        }
        if self._settings.mute_below > 0.0:
            now = self._clock()
            out["muted"] = dict(sorted(self.muted_count.items()))
            out["mutedSources"] = sorted(
                source for source in self._recent if self._judge(source, now)
            )
        return out

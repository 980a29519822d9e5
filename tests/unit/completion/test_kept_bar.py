"""What the developer kept moves the bar to show and the pacing; the record outlives a window.

The ledger is read through ``kept_bar.Ledger`` (its ``by``): the test feeds
the counts an ``AcceptanceLedger`` would have reached, as ``AcceptanceCounts``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from lsprotocol import types

from cache.l2.kept_file import KeptFile, KeptRow, kept_path
from cache.policies import make_policy
from cache.store import CompletionStore
from lsp_server.completion.gate import ShowBar, fixed_bar
from lsp_server.completion.inflight import InflightRegistry
from lsp_server.completion.kept_bar import (
    DECAY,
    MAX_LOWER,
    MAX_RAISE,
    MAX_SLOWDOWN,
    MAX_SPEEDUP,
    KeptRecord,
    LocalKept,
)
from lsp_server.completion.notify import UserNotifier
from lsp_server.completion.pipeline import CompletionPipeline
from lsp_server.completion.throttle import MissThrottle
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import SyntaxContext, syntax_context
from lsp_server.observe.acceptance import AcceptanceCounts
from lsp_server.observe.stats import ServerStats
from lsp_server.settings import CompletionSettings
from tests.support import conditions
from transport.backend import CompletionBackend, CompletionRequest, ScoredText

BASE = ShowBar(min_probability=0.3, min_onward_probability=0.6, max_lines=8)
URI = "file:///p/app.py"
TEXT = "def scaled(values, factor):\n    result = "


class ScoredBackend(CompletionBackend):
    """Answers with tokens and the probability the model gave each."""

    def __init__(self, tokens: list[tuple[str, float]]) -> None:
        self.tokens = tokens

    async def stream(self, request: CompletionRequest) -> AsyncIterator[str]:
        for text, probability in self.tokens:
            yield ScoredText(text, probability) if request.probabilities else text


def confidence_pipeline(backend: CompletionBackend) -> CompletionPipeline:
    return CompletionPipeline(
        store=CompletionStore(make_policy("hybrid", 64)),
        backend=backend,
        stats=ServerStats(),
        throttle=MissThrottle(min_delay=0.0, max_delay=0.0),
        inflight=InflightRegistry(),
        notifier=UserNotifier(lambda params: None),
        completion=CompletionSettings(min_probability=0.3),
    )


def context(text: str) -> SyntaxContext:
    doc = DocumentStore().open(URI, "python", 1, text)
    lines = text.split("\n")
    return syntax_context(doc, types.Position(line=len(lines) - 1, character=len(lines[-1])))


class Counted:
    """Cumulative acceptance counts by dimension, as the ledger keeps them."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], AcceptanceCounts] = {}
        self.now = 0.0

    def by(self, dimension: str) -> dict[str, AcceptanceCounts]:
        return {v: c for (d, v), c in self.groups.items() if d == dimension}

    def suggestions(
        self, *, language: str, source: str, shown: int, kept: int, typed: int = 0
    ) -> None:
        """``shown`` suggestions of 20 characters, ``kept`` of them accepted and kept whole.

        ``typed`` more of them the developer typed through by hand.
        """
        for key in (("language", language), ("scope", "function"), ("source", source)):
            counts = self.groups.setdefault(key, AcceptanceCounts())
            counts.shown += shown
            counts.typed_through += typed
            counts.accepted += kept
            counts.accepted_chars += 20 * kept
            counts.retained_short += 20 * kept
            counts.measured_short += 20 * kept
        self.now += 2.0  # the record looks at most once a second


def record_of(ledger: Counted) -> KeptRecord:
    return KeptRecord(ledger, clock=lambda: ledger.now)


def test_rarely_kept_suggestions_raise_the_bar_and_slow_the_pacing() -> None:
    ledger = Counted()
    record = record_of(ledger)
    ledger.suggestions(language="python", source="upstream", shown=30, kept=0)
    bar = record.bar(fixed_bar(BASE))("python", "function", "upstream")
    assert bar.min_probability == pytest.approx(BASE.min_probability + MAX_RAISE)
    assert bar.min_onward_probability == pytest.approx(BASE.min_onward_probability + MAX_RAISE)
    assert record.pacing("python") == pytest.approx(MAX_SLOWDOWN)


def test_kept_suggestions_lower_the_bar_and_quicken_the_pacing() -> None:
    ledger = Counted()
    record = record_of(ledger)
    ledger.suggestions(language="python", source="upstream", shown=30, kept=30)
    bar = record.bar(fixed_bar(BASE))("python", "function", "upstream")
    assert bar.min_probability == pytest.approx(BASE.min_probability - MAX_LOWER)
    assert bar.min_onward_probability == pytest.approx(BASE.min_onward_probability - MAX_LOWER)
    assert record.pacing("python") == pytest.approx(MAX_SPEEDUP)


def test_suggestions_typed_through_by_hand_count_as_kept() -> None:
    # a developer who types along instead of pressing Tab: the suggestions
    # were right, and the bar comes down as for accepted ones
    ledger = Counted()
    record = record_of(ledger)
    ledger.suggestions(language="python", source="upstream", shown=30, kept=0, typed=30)
    bar = record.bar(fixed_bar(BASE))("python", "function", "upstream")
    assert bar.min_probability == pytest.approx(BASE.min_probability - MAX_LOWER)
    assert record.pacing("python") == pytest.approx(MAX_SPEEDUP)


def test_nothing_moves_before_enough_suggestions_or_where_confidence_is_off() -> None:
    ledger = Counted()
    record = record_of(ledger)
    ledger.suggestions(language="python", source="upstream", shown=5, kept=0)
    assert record.bar(fixed_bar(BASE))("python", "function", "upstream") == BASE
    assert record.pacing("python") == 1.0
    ledger.suggestions(language="python", source="upstream", shown=30, kept=0)
    off = ShowBar(min_probability=0.0)
    assert record.bar(fixed_bar(off))("python", "function", "upstream") == off


def test_the_least_kept_value_decides_and_others_are_unmoved() -> None:
    ledger = Counted()
    record = record_of(ledger)
    ledger.suggestions(language="python", source="l2", shown=30, kept=0)
    ledger.suggestions(language="python", source="upstream", shown=60, kept=40)
    # python and the function scope are kept enough; suggestions from l2 are not
    assert record.lean("python", "function", "l2") == pytest.approx(1.0)
    assert record.lean("rust", "block", "typed") == 0.0


def test_the_record_decays_and_stays_bounded() -> None:
    ledger = Counted()
    record = record_of(ledger)
    ledger.suggestions(language="python", source="upstream", shown=40, kept=0)
    assert record.lean("python", "function", "upstream") > 0
    for _ in range(10):  # the developer now keeps what is shown
        ledger.suggestions(language="python", source="upstream", shown=20, kept=20)
    assert record.lean("python", "function", "upstream") < 0
    tally = record.tally("language", "python")
    assert tally.kept + tally.missed <= 1.0 / (1.0 - DECAY) + 1e-9


def test_a_new_window_starts_from_what_the_last_learned(tmp_path: Path) -> None:
    ledger = Counted()
    first = record_of(ledger)
    ledger.suggestions(language="python", source="upstream", shown=30, kept=0)
    first.look()
    store = KeptFile(tmp_path / "kept.sqlite")
    assert store.save(first.rows())
    second = KeptRecord()
    second.restore(store.load())
    assert second.lean("python", "function", "upstream") == pytest.approx(1.0)
    assert second.pacing("python") == pytest.approx(MAX_SLOWDOWN)


def test_a_damaged_record_file_is_a_fresh_start(tmp_path: Path) -> None:
    path = tmp_path / "kept.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    store = KeptFile(path)
    assert store.load() == []
    record = KeptRecord()
    record.restore([KeptRow("language", "python", 1e9, -1.0), KeptRow("colour", "x", 1, 1)])
    assert record.rows() == []  # out-of-range and unknown rows are not taken


def test_the_throttle_stretches_its_wait_by_the_pacing() -> None:
    now = [0.0]
    paced = MissThrottle(min_delay=0.01, max_delay=0.1, clock=lambda: now[0],
                         pacing=lambda uri: 2.0 if uri == "slow" else 1.0)  # fmt: skip
    assert paced.delay_for(at_line_start=False, uri="slow") == pytest.approx(0.2)
    assert paced.delay_for(at_line_start=False, uri="other") == pytest.approx(0.1)
    assert paced.delay_for(at_line_start=True, uri=None) == 0.0  # Enter: never delayed


async def test_the_local_record_is_read_at_start_and_written_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "kept.sqlite"
    ledger = Counted()
    first = LocalKept(record_of(ledger), KeptFile(path))
    first.start()
    ledger.suggestions(language="python", source="upstream", shown=30, kept=0)
    await first.aclose()
    second = LocalKept(KeptRecord(), KeptFile(path))
    second.start()

    async def restored() -> bool:
        return second.record.lean("python", "function", "upstream") > 0

    await conditions.until(restored, "the record to be read back")
    await second.aclose()
    # with no file (cache.l2 = "none") nothing is written anywhere
    assert kept_path("none") is None
    assert kept_path("sqlite", str(tmp_path / "l2.sqlite")) == path


async def test_through_the_pipeline_the_kept_record_moves_where_a_suggestion_is_cut() -> None:
    tokens = [("scale", 0.97), ("(", 0.99), ("values", 0.5), (",", 0.95), (" factor", 0.25),
              (")", 0.9)]  # fmt: skip
    cuts = {}
    for kept in (None, 0, 30):
        ledger = Counted()
        record = record_of(ledger)
        if kept is not None:
            ledger.suggestions(language="python", source="upstream", shown=30, kept=kept)
        pipe = confidence_pipeline(ScoredBackend(tokens))
        pipe.show_bar = record.bar(fixed_bar(ShowBar(min_probability=0.3)))
        answer = await pipe.complete(URI, context(TEXT), still_current=lambda: True)
        cuts[kept] = None if answer is None else answer.text
    assert cuts == {
        None: "scale(values,",  # nothing learnt yet: the configured bar
        0: "scale(",  # nothing kept: a higher bar cuts at the doubtful "values"
        30: "scale(values, factor)",  # everything kept: a lower bar shows it whole
    }

"""The acceptance ledger: shown, accepted, kept after the windows, by group; the mute gate."""

from __future__ import annotations

from lsp_server.observe.acceptance import (
    PENDING_KEPT,
    PROBE_EVERY,
    AcceptanceLedger,
    AcceptOutcome,
    Attribution,
    ShownSuggestion,
)
from lsp_server.observe.retained import Point, kept_chars

URI = "file:///w/headers.py"
PY = Attribution("upstream", "python", "function_definition")
CACHED = Attribution("exact", "python", "module")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Editor:
    """Plain-text documents that tell the ledger about every edit."""

    def __init__(self, **kwargs: float) -> None:
        self.docs: dict[str, list[str]] = {}
        self.clock = Clock()
        self.ledger = AcceptanceLedger(self.read, clock=self.clock, **kwargs)  # type: ignore[arg-type]
        self._ids = 0

    def read(self, uri: str, start: Point, end: Point, limit: int) -> str | None:
        lines = self.docs.get(uri)
        if lines is None:
            return None
        text = "\n".join(lines)
        return text[self._offset(lines, start) : self._offset(lines, end)][:limit]

    @staticmethod
    def _offset(lines: list[str], point: Point) -> int:
        return sum(len(line) + 1 for line in lines[: point[0]]) + point[1]

    def open(self, uri: str, text: str) -> None:
        self.docs[uri] = text.split("\n")

    def replace(self, uri: str, start: Point, end: Point, text: str) -> None:
        lines = self.docs[uri]
        whole = "\n".join(lines)
        s, e = self._offset(lines, start), self._offset(lines, end)
        self.docs[uri] = (whole[:s] + text + whole[e:]).split("\n")
        self.ledger.edit(uri, start, end, text)

    def show(self, at: Point, text: str, attribution: Attribution = PY, uri: str = URI) -> str:
        self._ids += 1
        item = f"s{self._ids}"
        self.ledger.shown(ShownSuggestion(item, uri, at[0], at[1], text, attribution, 12.5))
        return item

    def insert(self, at: Point, text: str, uri: str = URI) -> None:
        self.replace(uri, at, at, text)

    def wait(self, seconds: float) -> None:
        self.clock.now += seconds
        self.ledger.measure_due()


def test_a_full_accept_left_alone_is_kept_whole_after_both_windows() -> None:
    ed = Editor()
    ed.open(URI, "def parse_hea")
    item = ed.show((0, 13), "der(line):")
    ed.insert((0, 13), "der(line):")
    assert ed.ledger.accept(item) == AcceptOutcome(10, first=True)
    assert ed.ledger.watching(URI)
    ed.wait(29.9)
    assert ed.ledger.totals().retained_short == 0
    ed.wait(0.2)
    totals = ed.ledger.totals()
    assert (totals.shown, totals.accepted, totals.accepted_chars) == (1, 1, 10)
    assert (totals.retained_short, totals.measured_short, totals.retained_long) == (10, 10, 0)
    ed.wait(90)
    assert ed.ledger.totals().retained_long == 10
    assert not ed.ledger.watching(URI)
    assert ed.ledger.pending == 0


def test_deleting_half_of_an_accepted_line_before_the_short_window_keeps_half() -> None:
    ed = Editor()
    ed.open(URI, "    key, _, value = line.part")
    text = 'ition(":")'
    item = ed.show((0, 29), text)
    ed.insert((0, 29), text)
    ed.ledger.accept(item)
    ed.replace(URI, (0, 34), (0, 39), "")  # the second half
    ed.wait(30)
    assert ed.ledger.totals().retained_short == 5


def test_typing_on_after_the_accepted_text_does_not_count() -> None:
    ed = Editor()
    ed.open(URI, "x = ")
    item = ed.show((0, 4), "compute(a)")
    ed.insert((0, 4), "compute(a)")
    ed.ledger.accept(item)
    for i, ch in enumerate(" + 1\n"):
        ed.insert((0, 14 + i), ch)
    ed.insert((0, 0), "y = 0\n")  # and a line above it
    ed.wait(120)
    totals = ed.ledger.totals()
    assert (totals.retained_short, totals.retained_long) == (10, 10)


def test_word_then_line_then_full_accepts_of_one_suggestion_add_up() -> None:
    ed = Editor()
    ed.open(URI, "")
    text = "return key.strip()\nprint(key)"
    item = ed.show((0, 0), text)
    ed.insert((0, 0), "return")
    assert ed.ledger.accept(item, 6, "word") == AcceptOutcome(6, first=True)
    ed.insert((0, 6), " key.strip()\n")
    assert ed.ledger.accept(item, 19, "line") == AcceptOutcome(13, first=False)
    ed.insert((1, 0), "print(key)")
    assert ed.ledger.accept(item, None, "full") == AcceptOutcome(10, first=False)
    assert ed.ledger.accept(item, None, "full") == AcceptOutcome(0, first=False)  # twice
    totals = ed.ledger.totals()
    assert (totals.accepted, totals.accepted_chars) == (1, len(text))
    assert ed.ledger.snapshot()["byKind"] == {"full": 1, "word": 1, "line": 1}
    ed.wait(30)
    assert ed.ledger.totals().retained_short == len(text)


def test_partial_accept_lengths_are_utf16_code_units() -> None:
    ed = Editor()
    ed.open(URI, "s = ")
    item = ed.show((0, 4), '"😀" + x')
    ed.insert((0, 4), '"😀"')
    assert ed.ledger.accept(item, 4, "word") == AcceptOutcome(
        3, first=True
    )  # 😀 is two code units, one character


def test_an_unknown_item_is_not_counted() -> None:
    ed = Editor()
    assert ed.ledger.accept("s999") is None
    assert ed.ledger.totals().accepted == 0


def test_closing_a_document_counts_its_accepts_as_they_are() -> None:
    ed = Editor()
    ed.open(URI, "")
    item = ed.show((0, 0), "abcdef")
    ed.insert((0, 0), "abcdef")
    ed.ledger.accept(item)
    ed.replace(URI, (0, 0), (0, 3), "")
    ed.ledger.closed(URI)
    del ed.docs[URI]
    totals = ed.ledger.totals()
    assert (totals.retained_short, totals.retained_long) == (3, 3)
    assert ed.ledger.pending == 0 and ed.ledger.due() is None


def test_pending_accepts_are_bounded_and_the_oldest_is_counted_early() -> None:
    ed = Editor()
    ed.open(URI, "")
    for _ in range(PENDING_KEPT + 5):
        item = ed.show((0, 0), "ab")
        ed.insert((0, 0), "ab")
        ed.ledger.accept(item)
    assert ed.ledger.pending == PENDING_KEPT
    assert ed.ledger.totals().measured_long == 5 * 2


def test_counts_are_grouped_by_source_language_and_scope() -> None:
    ed = Editor()
    ed.open(URI, "")
    ed.show((0, 0), "never taken")
    item = ed.show((0, 0), "abc", CACHED)
    ed.insert((0, 0), "abc")
    ed.ledger.accept(item)
    ed.wait(120)
    snap = ed.ledger.snapshot()
    assert snap["shown"] == 2 and snap["accepted"] == 1
    assert snap["bySource"]["exact"]["retainedChars30s"] == 3
    assert snap["bySource"]["upstream"] == {
        "shown": 1,
        "accepted": 0,
        "acceptedChars": 0,
        "retainedChars30s": 0,
        "retainedChars120s": 0,
        "measuredChars30s": 0,
        "measuredChars120s": 0,
        "typedThrough": 0,
    }
    assert set(snap["byScope"]) == {"module", "function_definition"}
    assert snap["byLanguage"]["python"]["shown"] == 2
    assert snap["latencyMs"] == {"shownP50": 12.5, "acceptedP50": 12.5}


def test_a_whole_document_replacement_is_followed_as_the_edit_between_the_texts() -> None:
    ed = Editor()
    ed.open(URI, "a = 1\nb = ")
    item = ed.show((1, 4), "compute()")
    ed.insert((1, 4), "compute()")
    ed.ledger.accept(item)
    before = "\n".join(ed.docs[URI])
    after = "import os\n" + before
    ed.docs[URI] = after.split("\n")
    ed.ledger.replaced(URI, before, after)
    ed.wait(30)
    assert ed.ledger.totals().retained_short == 9


def test_windows_are_settings() -> None:
    ed = Editor(short_window=0.5, long_window=2.0)
    ed.open(URI, "")
    item = ed.show((0, 0), "abc")
    ed.insert((0, 0), "abc")
    ed.ledger.accept(item)
    ed.wait(0.5)
    assert ed.ledger.totals().retained_short == 3
    assert ed.ledger.due() == 102.0
    ed.wait(1.5)
    assert ed.ledger.totals().retained_long == 3


def test_the_mute_gate_is_off_by_default() -> None:
    ed = Editor()
    ed.open(URI, "")
    for _ in range(100):
        ed.show((0, 0), "never accepted")
    ed.wait(60)
    assert not ed.ledger.muted("upstream")
    assert "muted" not in ed.ledger.snapshot()


def test_a_source_whose_suggestions_are_not_kept_is_muted_with_probes() -> None:
    ed = Editor(mute_below=0.2, mute_over=10)
    ed.open(URI, "")
    for n in range(9):
        ed.show((0, 0), f"never accepted {n}")
    ed.wait(31)
    assert not ed.ledger.muted("upstream")  # nine settled suggestions: too few to judge
    ed.show((0, 0), "never accepted 9")
    ed.wait(31)
    verdicts = [ed.ledger.muted("upstream") for _ in range(2 * PROBE_EVERY)]
    assert verdicts.count(False) == 2  # one probe in PROBE_EVERY
    assert not ed.ledger.muted("exact")
    snap = ed.ledger.snapshot()
    assert snap["mutedSources"] == ["upstream"]
    assert snap["muted"] == {"upstream": 2 * PROBE_EVERY - 2}
    assert ed.ledger.kept_share("upstream") == 0.0


def test_a_source_whose_suggestions_are_kept_is_not_muted() -> None:
    ed = Editor(mute_below=0.2, mute_over=4)
    ed.open(URI, "")
    for _ in range(4):
        item = ed.show((0, 0), "abcd")
        ed.insert((0, 0), "abcd")
        ed.ledger.accept(item)
        ed.show((0, 0), "zzzz")  # one not taken for each one kept: half the shown chars
    ed.wait(31)
    assert ed.ledger.kept_share("upstream") == 0.5
    assert not ed.ledger.muted("upstream")


# -- following the accepted text through edits that replace it or land inside it ---------

LINE = "return sum(item.price for item in items)"
HEAD = "import math\n\n\ndef total( items ):\n    "


def accepted_line(accept_first: bool = False) -> tuple[Editor, str]:
    ed = Editor()
    ed.open(URI, HEAD + "\n\n\nx=1\n")
    item = ed.show((4, 4), LINE)
    if accept_first:
        ed.ledger.accept(item)
    ed.insert((4, 4), LINE)
    if not accept_first:
        ed.ledger.accept(item)
    return ed, item


def replace_all(ed: Editor, after: str) -> None:
    before = "\n".join(ed.docs[URI])
    ed.docs[URI] = after.split("\n")
    ed.ledger.replaced(URI, before, after)


def test_a_whole_document_replace_that_drops_the_line_keeps_nothing() -> None:
    ed, _ = accepted_line()
    replace_all(ed, "def main(argv):\n    parser = build_parser(argv)\n    return run(parser)\n")
    ed.wait(120)
    totals = ed.ledger.totals()
    assert (totals.retained_short, totals.retained_long, totals.measured_short) == (0, 0, 40)


def test_a_formatter_replace_that_keeps_the_line_keeps_all_of_it() -> None:
    ed, _ = accepted_line()
    replace_all(ed, "import math\n\n\ndef total(items):\n    " + LINE + "\n\n\nx = 1\n")
    ed.insert((0, 0), "# shapes\n")  # and it is still followed after
    ed.wait(120)
    totals = ed.ledger.totals()
    assert (totals.retained_short, totals.retained_long) == (40, 40)


def test_a_paste_over_the_line_with_the_line_changed_keeps_what_is_still_there() -> None:
    ed, _ = accepted_line()
    changed = LINE.replace("price", "cost")
    ed.replace(URI, (3, 0), (5, 0), "def total(items):\n    " + changed + "\n")
    ed.wait(30)
    assert ed.ledger.totals().retained_short == kept_chars(LINE, changed) == 36


def test_a_skeleton_filled_in_keeps_all_but_what_was_replaced() -> None:
    skeleton = "def area(self):\n        pass\n\n    def name(self):\n        return 'shape'"
    ed = Editor()
    ed.open(URI, "class Shape:\n    ")
    item = ed.show((1, 4), skeleton)
    ed.insert((1, 4), skeleton)
    ed.ledger.accept(item)
    body = "\n".join(f"        side_{i} = self.sides[{i}] * 2" for i in range(40))
    ed.replace(URI, (2, 8), (2, 12), body.lstrip())
    ed.wait(30)
    assert ed.ledger.totals().retained_short == len(skeleton) - len("pass")


def test_an_accept_reported_before_its_edit_is_followed_from_that_edit() -> None:
    ed, _ = accepted_line(accept_first=True)
    ed.wait(120)
    totals = ed.ledger.totals()
    assert (totals.accepted_chars, totals.retained_short, totals.retained_long) == (40, 40, 40)


def test_an_accept_before_its_edit_waits_through_typing_sent_with_it() -> None:
    ed = Editor()
    ed.open(URI, "x = ")
    item = ed.show((0, 4), "compute(a)")
    ed.ledger.accept(item)  # the client's debounced changes come after the accept
    ed.insert((0, 4), "co")  # typed by hand
    ed.insert((0, 6), "mpute(a)")  # the accept's own edit
    ed.insert((0, 14), " + 1")
    ed.wait(30)
    totals = ed.ledger.totals()
    assert (totals.accepted_chars, totals.retained_short) == (8, 8)


def test_an_accept_whose_edit_never_comes_is_counted_where_it_was_shown() -> None:
    ed = Editor()
    ed.open(URI, "x = ")
    item = ed.show((0, 4), "compute(a)")
    ed.ledger.accept(item)
    ed.wait(30)
    totals = ed.ledger.totals()
    assert (totals.accepted_chars, totals.retained_short, totals.measured_short) == (10, 0, 10)


def test_characters_typed_by_hand_before_the_accept_are_not_accepted() -> None:
    # Neovim's ghost text: the typed start, then the rest inserted, the whole item reported
    ed = Editor()
    ed.open(URI, "x = ")
    item = ed.show((0, 4), "compute(a)")
    for i, ch in enumerate("com"):
        ed.insert((0, 4 + i), ch)
    ed.insert((0, 7), "pute(a)")
    assert ed.ledger.accept(item) == AcceptOutcome(7, first=True)
    ed.replace(URI, (0, 4), (0, 7), "")  # the typed part deleted: the accepted part is whole
    ed.wait(30)
    totals = ed.ledger.totals()
    assert (totals.accepted_chars, totals.retained_short, totals.measured_short) == (7, 7, 7)


def test_a_held_item_whose_accept_replaces_the_typed_start_counts_only_the_rest() -> None:
    # VS Code's held item: the accept's edit replaces the typed start with the whole text
    ed = Editor()
    ed.open(URI, "x = ")
    item = ed.show((0, 4), "compute(a)")
    ed.insert((0, 4), "co")
    ed.insert((0, 6), "m")
    ed.replace(URI, (0, 4), (0, 7), "compute(a)")
    assert ed.ledger.accept(item) == AcceptOutcome(7, first=True)
    ed.wait(30)
    assert ed.ledger.totals().retained_short == 7


def test_an_edit_above_between_the_insert_and_the_accept_still_counts_it() -> None:
    ed = Editor()
    ed.open(URI, "a = 1\nx = ")
    item = ed.show((1, 4), "compute(a)")
    ed.insert((1, 4), "compute(a)")
    ed.insert((1, 14), " ")  # typed after it before the accept went out
    assert ed.ledger.accept(item) == AcceptOutcome(10, first=True)
    ed.wait(30)
    assert ed.ledger.totals().retained_short == 10


def test_a_suggestion_typed_through_counts_once_where_it_was_first_shown() -> None:
    ed = Editor()
    ed.open(URI, "def parse_hea")
    ed.show((0, 13), "der(line):")
    ed.insert((0, 13), "de")
    rest = ed.show((0, 15), "r(line):", CACHED)  # served from memory as the user types
    assert ed.ledger.totals().shown == 1
    ed.insert((0, 15), "r(line):")
    assert ed.ledger.accept(rest) == AcceptOutcome(8, first=True)
    ed.wait(30.0)
    totals = ed.ledger.totals()
    assert (totals.shown, totals.accepted, totals.retained_short) == (1, 1, 8)
    snap = ed.ledger.snapshot()
    assert snap["bySource"]["upstream"]["accepted"] == 1 and "exact" not in snap["bySource"]


def test_a_suggestion_typed_through_half_its_first_line_by_hand_counts_as_typed_through() -> None:
    ed = Editor()
    ed.open(URI, "def parse_hea")
    ed.show((0, 13), "der(line):\n    pass")  # its first line is 10 characters
    ed.insert((0, 13), "de")
    ed.show((0, 15), "r(line):\n    pass", CACHED)
    assert ed.ledger.totals().typed_through == 0  # 2 of 10: not yet a sign
    ed.insert((0, 15), "r(l")
    ed.show((0, 18), "ine):\n    pass", CACHED)
    ed.insert((0, 18), "i")
    ed.show((0, 19), "ne):\n    pass", CACHED)  # typed further: still one
    totals = ed.ledger.totals()
    assert (totals.shown, totals.accepted, totals.typed_through) == (1, 0, 1)
    snap = ed.ledger.snapshot()
    assert snap["typedThrough"] == 1
    assert snap["bySource"]["upstream"]["typedThrough"] == 1
    assert snap["byScope"]["function_definition"]["typedThrough"] == 1


def test_a_suggestion_typed_over_is_not_typed_through() -> None:
    ed = Editor()
    ed.open(URI, "def parse_hea")
    ed.show((0, 13), "der(line):")
    ed.insert((0, 13), "ders(")  # diverges after "der"
    ed.show((0, 18), "line):")  # another suggestion, not its rest
    assert ed.ledger.totals().typed_through == 0


def test_a_different_suggestion_after_typing_is_another_one() -> None:
    ed = Editor()
    ed.open(URI, "def parse_hea")
    ed.show((0, 13), "der(line):")
    ed.insert((0, 13), "dx")
    ed.show((0, 15), "(line):")  # not the rest of the first: "der(" was not typed
    ed.show((1, 0), "r(line):")  # another line
    ed.show((1, 0), "r(line):")  # shown again where it stands: the editor asked again
    assert ed.ledger.totals().shown == 4


def test_typing_through_counts_in_the_editors_position_units() -> None:
    # Each of these emoji is two UTF-16 code units (the editor's columns) and
    # one Python character: the first line is 15 units, 11 characters.
    ed = Editor()
    ed.open(URI, "msg = ")
    ed.show((0, 6), '"\U0001f600\U0001f600\U0001f600\U0001f600 done"')
    ed.show((0, 13), '\U0001f600 done"', CACHED)  # '"' and three emoji typed: 7 units
    totals = ed.ledger.totals()
    assert (totals.shown, totals.typed_through) == (1, 0)  # 7 of 15: not yet half
    ed.show((0, 15), ' done"', CACHED)  # 9 of 15
    totals = ed.ledger.totals()
    assert (totals.shown, totals.typed_through) == (1, 1)

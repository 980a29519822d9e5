"""Hand-made editing sessions that put the retained-characters count to the test.

Each is one suggestion shown, accepted and then edited, as a recording
server writes it (``shown`` and ``accept`` beside ordinary ``change``
events), with what a person would say is still there after the windows:

* ``dropped``: a whole-document replace that drops the accepted line and
  brings unrelated code (kept: none of it);
* ``formatted``: a formatter's whole-document replace that keeps the line
  while changing the code before and after it (kept: all of it);
* ``skeleton``: a skeleton accepted, then its ``pass`` replaced by a body far
  longer than the skeleton (kept: all but ``pass``);
* ``accept_first``: the line accepted and left alone, the accept reported
  before its edit (kept: all of it, as when the edit comes first);
* ``typed``: the first characters of the line typed by hand while it was
  shown, the rest accepted (accepted and kept: only the rest).

``edit_sequence`` gives the same session as the edits and the accept an
editor sends a live server, in the order it sends them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lsp_server.observe.trace.format import (
    AcceptEvent,
    ChangeEvent,
    CloseEvent,
    CompleteEvent,
    Event,
    OpenEvent,
    Position,
    ShownEvent,
    TextChange,
    Trace,
    TraceHeader,
)
from lsp_server.observe.trace.writer import write_trace

URI = "file:///w/shapes.py"
#: a 40-character line, accepted at the body of ``total``
LINE = "return sum(item.price for item in items)"
HEAD = "import math\n\n\ndef total( items ):\n    "
TAIL = "\n\n\nx=1\n"
SKELETON_HEAD = "class Shape:\n    "
SKELETON = "def area(self):\n        pass\n\n    def name(self):\n        return 'shape'"
#: replaces the skeleton's ``pass``: far longer than the skeleton
BODY = "\n".join(f"        side_{i} = self.sides[{i}] * math.cos({i})" for i in range(30))
UNRELATED = (
    "import argparse\n\n\ndef main(argv):\n    parser = build_parser(argv)\n"
    "    options = parser.parse_args()\n    return run(options.path, options.verbose)\n"
)


@dataclass(frozen=True)
class Session:
    """A hand-made session: its open text, the suggestion, the edits, what is kept."""

    name: str
    opened: str
    at: tuple[int, int]
    suggestion: str
    #: (change, ...) before the accept, and after it (before the windows)
    typed: tuple[TextChange, ...]
    inserted: TextChange
    later: tuple[TextChange, ...]
    accept_first: bool
    accepted_chars: int
    kept_chars: int


def _at(line: int, character: int) -> tuple[Position, Position]:
    return Position(line, character), Position(line, character)


def _formatted() -> str:
    return HEAD.replace("( items )", "(items)") + LINE + "\n\n\nx = 1\n"


def _skeleton_fill() -> TextChange:
    # ``pass`` is on the skeleton's second line, at (2, 8)
    return TextChange(BODY.lstrip(), (Position(2, 8), Position(2, 12)))


def sessions() -> dict[str, Session]:
    """The hand-made sessions by name."""
    line_at = (4, 4)
    insert = TextChange(LINE, _at(*line_at))
    one = len(LINE)
    return {
        "dropped": Session(
            "dropped", HEAD + TAIL, line_at, LINE, (), insert, (TextChange(UNRELATED),),
            False, one, 0,
        ),
        "formatted": Session(
            "formatted", HEAD + TAIL, line_at, LINE, (), insert, (TextChange(_formatted()),),
            False, one, one,
        ),
        "skeleton": Session(
            "skeleton", SKELETON_HEAD, (1, 4), SKELETON, (), TextChange(SKELETON, _at(1, 4)),
            (_skeleton_fill(),), False, len(SKELETON), len(SKELETON) - len("pass"),
        ),
        "accept_first": Session(
            "accept_first", HEAD + TAIL, line_at, LINE, (), insert, (), True, one, one,
        ),
        "typed": Session(
            "typed", HEAD + TAIL, line_at, LINE,
            tuple(TextChange(ch, _at(4, 4 + i)) for i, ch in enumerate("ret")),
            TextChange(LINE[3:], _at(4, 7)), (), False, one - 3, one - 3,
        ),
    }  # fmt: skip


def trace(session: Session, *, seconds: float = 200.0) -> Trace:
    """``session`` as a recording server writes it (default windows: 30 s and 120 s)."""
    line, character = session.at
    events: list[Event] = [
        OpenEvent(t=0.0, uri=URI, text=session.opened),
        CompleteEvent(t=0.5, uri=URI, position=Position(line, character)),
        ShownEvent(
            t=0.51,
            uri=URI,
            item="s1",
            position=Position(line, character),
            text=session.suggestion,
            source="upstream",
            language="python",
            scope="function_definition",
            latency_ms=2.0,
        ),
    ]
    t = 0.6
    for change in session.typed:
        events.append(ChangeEvent(t=t, uri=URI, changes=(change,)))
        t += 0.1
    accept = AcceptEvent(t=t + 0.4, uri=URI, item="s1")
    change = ChangeEvent(t=t + 0.4, uri=URI, changes=(session.inserted,))
    events.extend([accept, change] if session.accept_first else [change, accept])
    for n, later in enumerate(session.later):
        events.append(ChangeEvent(t=5.0 + n, uri=URI, changes=(later,)))
    events.append(CloseEvent(t=seconds, uri=URI))
    meta = {"acceptance": {"windowsSeconds": [30.0, 120.0]}, "seconds": seconds}
    return Trace(header=TraceHeader(final={URI: ""}, meta=meta), events=events)


def write(directory: Path) -> dict[str, Path]:
    """Every session written as a trace file in ``directory``, by name."""
    paths = {}
    for name, session in sessions().items():
        paths[name] = directory / f"{name}.jsonl"
        write_trace(paths[name], trace(session))
    return paths

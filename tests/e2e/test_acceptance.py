"""What the developer kept, through the real server: accepts, retained characters, replay.

The server process is driven as an editor drives it: it asks for a
suggestion, inserts it (didChange) and reports the accept
(``workspace/executeCommand scopecache.accepted``, with the kind and length
of a partial accept), then edits on. The acceptance windows are set short
and every check waits on the stats, never on a fixed time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.acceptance import trace_acceptance
from lsp_server.kit.client import ServerProcess
from lsp_server.kit.replay import replay_trace
from lsp_server.kit.upstream_process import ReferenceProcess
from lsp_server.observe.trace.format import AcceptEvent, ShownEvent, TextChange
from lsp_server.observe.trace.reader import read_trace
from tests.support import accept_sessions
from tests.support.conditions import until

pytestmark = pytest.mark.e2e

CORPUS = """\
import math


def greet(name):
    message = "Hello, " + name.title()
    return message.upper()


def area(width, height):
    result = width * height + math.pi
    return round(result, 2)
"""
URI = "file:///work/project/app.py"
GREET = "def greet(name):\n    message = "
MESSAGE = '"Hello, " + name.title()'
AREA = "def area(width, height):\n    result = "
RESULT = "width * height + math.pi"
#: windows short enough for a test, long enough for its edits to land before them
WINDOWS = {"shortWindowSeconds": 1.0, "longWindowSeconds": 2.0}


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[ReferenceProcess]:
    corpus = tmp_path / "corpus.py"
    corpus.write_text(CORPUS)
    async with ReferenceProcess([corpus]) as svc:
        yield svc


def options(service: ReferenceProcess, **extra: Any) -> dict[str, Any]:
    return {
        "endpoint": service.url,
        "provider": "openai",
        "model": "m",
        "transport": {"caFile": service.ca_file},
        "cache": {"l2": "none"},
        "speculative": {"enabled": False},
        "acceptance": dict(WINDOWS),
        **extra,
    }


async def suggestion(server: ServerProcess, line: int, character: int) -> tuple[str, str, str]:
    """The suggestion at a position: its text, item id and source."""
    item = await server.inline(URI, line, character)
    assert item is not None, "no suggestion"
    assert isinstance(item.insert_text, str) and item.command is not None
    item_id, meta = item.command.arguments or [None, None]
    return item.insert_text, str(item_id), str(meta["source"])


async def settled(server: ServerProcess) -> dict[str, Any]:
    """The acceptance stats once every accept's windows are counted."""
    answer: dict[str, Any] = {}

    async def done() -> bool:
        answer.update((await server.stats())["acceptance"])
        return answer["pending"] == 0

    await until(done, "every accept's windows to be counted")
    return answer


async def session(server: ServerProcess) -> None:
    """A full accept with half of it deleted at once, then a word and a line accept."""
    server.open(URI, GREET)
    text, item, source = await suggestion(server, 1, 14)
    assert (text, source) == (MESSAGE, "upstream")
    server.insert(URI, 1, 14, text)
    assert await server.accepted(item) == {"known": True}
    half = len(MESSAGE) // 2
    server.change(URI, [{"range": {"start": {"line": 1, "character": 14 + half},
                                   "end": {"line": 1, "character": 14 + len(MESSAGE)}},
                         "text": ""}])  # fmt: skip

    server.insert(URI, 1, 14 + half, "\n\n" + AREA)
    text, item, _ = await suggestion(server, 4, 13)
    assert text == RESULT
    server.insert(URI, 4, 13, "width")  # the next word
    await server.accepted(item, kind="word", length=5)
    server.insert(URI, 4, 18, " * height + math.pi")  # the rest of the line
    await server.accepted(item, kind="line", length=len(RESULT))


async def test_full_word_and_line_accepts_are_counted_and_half_a_deleted_line_is_half_kept(
    service: ReferenceProcess,
) -> None:
    async with ServerProcess(options(service)) as server:
        await session(server)
        acceptance = await settled(server)
    upstream = acceptance["bySource"]["upstream"]
    assert acceptance["byKind"] == {"full": 1, "word": 1, "line": 1}
    assert (upstream["shown"], upstream["accepted"]) == (2, 2)
    assert upstream["acceptedChars"] == len(MESSAGE) + len(RESULT)
    half = len(MESSAGE) - len(MESSAGE) // 2
    assert upstream["retainedChars30s"] == len(RESULT) + half
    assert upstream["retainedChars120s"] == len(RESULT) + half
    assert upstream["measuredChars120s"] == len(MESSAGE) + len(RESULT)
    assert acceptance["byLanguage"]["python"]["accepted"] == 2
    assert set(acceptance["byScope"]) == {"function_definition"}
    assert acceptance["windowsSeconds"] == [1.0, 2.0]


async def test_a_suggestion_typed_through_by_hand_counts_as_typed_through_once(
    service: ReferenceProcess,
) -> None:
    # a developer who types along instead of pressing Tab, the editor asking
    # at every key: the rest is served from memory, one suggestion typed through
    async with ServerProcess(options(service)) as server:
        server.open(URI, AREA)
        text, _, source = await suggestion(server, 1, 13)
        assert (text, source) == (RESULT, "upstream")
        for typed in range(len(RESULT) - 1):
            server.insert(URI, 1, 13 + typed, RESULT[typed])
            rest, _, _ = await suggestion(server, 1, 14 + typed)
            assert rest == RESULT[typed + 1 :]
        acceptance = (await server.stats())["acceptance"]
    assert (acceptance["shown"], acceptance["accepted"], acceptance["typedThrough"]) == (1, 0, 1)
    assert acceptance["bySource"]["upstream"]["typedThrough"] == 1
    assert acceptance["byScope"]["function_definition"]["typedThrough"] == 1


async def test_an_unknown_item_is_reported_unknown_and_counts_nothing(
    service: ReferenceProcess,
) -> None:
    async with ServerProcess(options(service)) as server:
        server.open(URI, GREET)
        assert await server.accepted("s404", kind="word", length=3) == {"known": False}
        stats = await server.stats()
    assert stats["accepted"] == 0 and stats["acceptance"]["accepted"] == 0


async def test_a_replayed_trace_reports_the_acceptance_the_live_server_did(
    service: ReferenceProcess, tmp_path: Path
) -> None:
    path = tmp_path / "session.jsonl"
    recording = options(service, recordTrace=str(path), recordText=True)
    async with ServerProcess(recording) as server:
        await session(server)
        live = await settled(server)
    trace = read_trace(path)
    assert sum(isinstance(e, ShownEvent) for e in trace.events) == live["shown"]
    assert sum(isinstance(e, AcceptEvent) for e in trace.events) == 3
    assert trace.header.meta["acceptance"] == {"windowsSeconds": [1.0, 2.0]}

    replayed = await replay_trace(trace, settings={"cache": {"l2": "none"}})
    summary = replayed.summary()
    assert summary["acceptance"] == live
    assert trace_acceptance(path) == live  # what simulate reports


async def test_a_source_whose_suggestions_are_not_kept_stops_being_served(
    service: ReferenceProcess,
) -> None:
    gate = {**WINDOWS, "shortWindowSeconds": 0.2, "muteBelow": 0.5, "muteOver": 3}
    async with ServerProcess(options(service, acceptance=gate)) as server:
        server.open(URI, GREET)
        sources = [(await suggestion(server, 1, 14))[2] for _ in range(4)]
        assert sources == ["upstream", "exact", "exact", "exact"]  # shown, never accepted

        async def silent() -> bool:
            item = await server.inline(URI, 1, 14)
            return item is None

        await until(silent, "the exact hits to be withheld")
        acceptance = (await server.stats())["acceptance"]
        assert acceptance["mutedSources"] == ["exact"]
        assert acceptance["muted"]["exact"] >= 1
        # the source's suggestions still go out now and then, so it can recover
        answers = [await server.inline(URI, 1, 14) for _ in range(10)]
        assert sum(a is not None for a in answers) >= 1


def test_the_accept_command_is_advertised() -> None:
    # editors forward an item's command only when the server lists it
    from lsp_server import create_server

    server = create_server()
    assert "scopecache.accepted" in server.protocol.fm.commands


# -- the hand-made sessions: edits that replace the accepted text or land inside it ------

#: a corpus whose continuations are the hand-made sessions' suggestions
SESSIONS_CORPUS = (
    accept_sessions.HEAD.replace("( items )", "(items)")
    + accept_sessions.LINE
    + "\n\n\n"
    + accept_sessions.SKELETON_HEAD
    + accept_sessions.SKELETON
    + "\n"
)
COUNTED = ("acceptedChars", "retainedChars30s", "retainedChars120s")


async def live_session(
    server: ServerProcess, session: accept_sessions.Session, uri: str
) -> dict[str, int]:
    """``session`` driven as an editor drives it; what it added to the counts, and the text."""
    before = await settled(server)
    server.open(uri, session.opened)
    item = await server.inline(uri, *session.at)
    assert item is not None and isinstance(item.insert_text, str) and item.command is not None
    text, item_id = item.insert_text, str((item.command.arguments or [""])[0])
    inserted = session.inserted
    if session.name == "skeleton":  # the service suggests the skeleton's first lines
        assert text.startswith("def area(self):\n        pass\n")
        inserted = TextChange(text, inserted.range)
    else:
        assert text == session.suggestion
    for change in session.typed:
        server.change(uri, [change.to_json()])
    if session.accept_first:  # answered before the edit is sent: the server has it first
        assert await server.accepted(item_id) == {"known": True}
        server.change(uri, [inserted.to_json()])
    else:
        server.change(uri, [inserted.to_json()])
        assert await server.accepted(item_id) == {"known": True}
    for later in session.later:
        server.change(uri, [later.to_json()])
    after = await settled(server)
    added = {key: after[key] - before[key] for key in COUNTED}
    added["suggested"] = len(text)
    return added


def expected(session: accept_sessions.Session, suggested: int) -> dict[str, int]:
    accepted, kept = session.accepted_chars, session.kept_chars
    if session.name == "skeleton":
        accepted, kept = suggested, suggested - len("pass")
    return {
        "acceptedChars": accepted,
        "retainedChars30s": kept,
        "retainedChars120s": kept,
        "suggested": suggested,
    }


async def test_the_live_server_counts_what_is_kept_through_replaces_fills_and_late_edits(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "corpus.py"
    corpus.write_text(SESSIONS_CORPUS)
    path = tmp_path / "session.jsonl"
    async with ReferenceProcess([corpus]) as svc:
        recording = options(svc, recordTrace=str(path), recordText=True)
        async with ServerProcess(recording) as server:
            counted = {}
            for n, (name, session) in enumerate(sorted(accept_sessions.sessions().items())):
                counted[name] = await live_session(server, session, f"file:///w/s{n}.py")
            live = await settled(server)
    for name, session in accept_sessions.sessions().items():
        assert counted[name] == expected(session, counted[name]["suggested"]), name
    # and replay reports what the live server did
    replayed = await replay_trace(read_trace(path), settings={"cache": {"l2": "none"}})
    assert replayed.summary()["acceptance"] == live


def test_scopecache_replay_counts_the_hand_made_sessions(tmp_path: Path) -> None:
    for name, path in accept_sessions.write(tmp_path).items():
        session = accept_sessions.sessions()[name]
        out = subprocess.run(
            [sys.executable, "-m", "lsp_server", "replay", str(path), "--json"],
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        )
        acceptance = json.loads(out.stdout)["acceptance"]
        kept = (acceptance["retainedChars30s"], acceptance["retainedChars120s"])
        assert acceptance["acceptedChars"] == session.accepted_chars, name
        assert kept == (session.kept_chars, session.kept_chars), name

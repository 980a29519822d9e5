"""``recordTrace``: the real server writes the session it serves as a valid trace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lsp_server.kit.client import ServerProcess
from lsp_server.observe.trace.format import ChangeEvent, CompleteEvent, OpenEvent
from lsp_server.observe.trace.reader import read_trace
from lsp_server.server.recorder import mask

pytestmark = pytest.mark.e2e

URI = "file:///project/app.py"
SECRET_URI = "file:///project/.env"
TEXT = 'def greet(name):\n    return "hi " + name  # é😀\n'


async def record(path: Path, *, include_text: bool) -> None:
    options = {
        "cache": {"l2": "none"},
        "recordTrace": str(path),
        "recordText": include_text,
    }
    env = {**os.environ, "SCOPECACHE_API_KEY": "sk-record-marker-123"}
    async with ServerProcess(options, env=env) as server:
        server.open(URI, TEXT)
        server.open(SECRET_URI, "API_KEY=abc\n")
        server.insert(URI, 2, 0, "x = 1")
        await server.inline(URI, 2, 5)
        server.insert(SECRET_URI, 1, 0, "MORE=1")
        server.close(URI)


async def test_recorded_trace_is_valid_and_masks_code_by_default(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    await record(path, include_text=False)
    trace = read_trace(path)  # validates every position against the documents
    assert list(trace.header.final) == [URI]
    assert trace.header.final[URI] == mask(TEXT + "x = 1")
    opens = [e for e in trace.events if isinstance(e, OpenEvent)]
    assert [e.uri for e in opens] == [URI]
    assert opens[0].text.startswith("xxx xxxxx(xxxx):")
    assert any(isinstance(e, ChangeEvent) for e in trace.events)
    completes = [e for e in trace.events if isinstance(e, CompleteEvent)]
    assert len(completes) == 1 and completes[0].position.line == 2
    raw = path.read_text()
    assert "greet" not in raw and "sk-record-marker-123" not in raw and ".env" not in raw


async def test_recorded_trace_keeps_the_text_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    await record(path, include_text=True)
    trace = read_trace(path)
    assert trace.header.final[URI] == TEXT + "x = 1"
    assert trace.header.meta["textIncluded"] is True


def test_masking_keeps_utf16_positions() -> None:
    assert mask("a😀b é") == "xxxx x"
    assert len(mask(TEXT).encode("utf-16-le")) == len(TEXT.encode("utf-16-le"))

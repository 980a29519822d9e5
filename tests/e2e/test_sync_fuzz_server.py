"""Random incremental edits through the real server over stdio (a bounded run).

The in-process state machine (tests/unit/documents/test_document_fuzz.py) checks the
document store against a reference model step by step; this run sends the
same kinds of edits through JSON-RPC framing to the real process and checks
that every change reached it in order (the server's recorded trace, built
from the changes it received, ends with the reference model's text), every
completion request at a random position is answered and nothing errors.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from lsp_server.kit.client import ServerProcess
from lsp_server.observe.trace.reader import read_trace

pytestmark = pytest.mark.e2e

URI = "file:///fuzz/doc.py"
ALPHABET = ["a", "b", " ", "\n", "\r\n", "é", "😀", "e\u0301", "(", ")", ":", "    "]


def utf16_position(text: str, index: int) -> dict[str, int]:
    before = text[:index]
    line = before.count("\n")
    column_text = before[before.rfind("\n") + 1 :]
    return {"line": line, "character": len(column_text.encode("utf-16-le")) // 2}


def random_edit(rng: random.Random, text: str) -> tuple[dict[str, object], str]:
    """One LSP change event and the text after it (edits never split a surrogate pair)."""
    if rng.random() < 0.03:
        new = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 30)))
        return {"text": new}, new
    start = rng.randint(0, len(text))
    end = min(len(text), start + rng.choice([0, 0, 1, 2, 5, 20]))
    inserted = "".join(rng.choice(ALPHABET) for _ in range(rng.choice([0, 1, 1, 3, 12])))
    change = {
        "range": {"start": utf16_position(text, start), "end": utf16_position(text, end)},
        "text": inserted,
    }
    return change, text[:start] + inserted + text[end:]


async def test_random_edits_through_the_server_keep_its_text_exact(tmp_path: Path) -> None:
    rng = random.Random(20261129)
    trace_path = tmp_path / "fuzz.jsonl"
    options = {"cache": {"l2": "none"}, "recordTrace": str(trace_path), "recordText": True}
    text = "def f(x):\n    return x\n"
    changes = 0
    async with ServerProcess(options) as server:
        server.open(URI, text)
        for step in range(400):
            change, text = random_edit(rng, text)
            server.change(URI, [change])
            changes += 1
            if step % 20 == 0:
                index = rng.randint(0, len(text))
                pos = utf16_position(text, index)
                await server.inline(URI, pos["line"], pos["character"])
        stats = await server.stats()
        assert stats["keystrokes"] == changes
        assert stats["errors"] == 0
        server.close(URI)
    trace = read_trace(trace_path)
    # \r\n and lone \r: LSP line ends; the recorder keeps them inside lines
    assert trace.header.final[URI].replace("\r\n", "\n") == text.replace("\r\n", "\n")

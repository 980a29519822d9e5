"""The speculative prefetch after a hit: one timer per document, for the newest answer.

Answers that follow one another faster than ``SPECULATION_DELAY`` share one
timer: a client asking in a loop, or a user typing through a suggestion
quickly, must not have each answer's prefetch run between the next
requests. The server runs in process with the fake backend at the
transport seam, which counts how often the prefetch step reads its
counters (once per prefetch considered).
"""

from __future__ import annotations

import asyncio

from lsprotocol import types

from lsp_server import create_server
from lsp_server.server.suggestions import SPECULATION_DELAY
from tests.support.greet import EXPECTED
from tests.unit.server.test_immediate_route import INLINE, PARAMS, Editor
from transport.backend import StaticBackend, TransportCounters

#: hits asked in one go, within one loop iteration
BURST = 8


class CountingBackend(StaticBackend):
    """The fake backend, counting the reads of its counters."""

    def __init__(self, answer: str) -> None:
        super().__init__(answer)
        self.reads = 0

    def counters(self) -> TransportCounters:
        self.reads += 1
        return super().counters()


async def _timers_due_by_now_have_run() -> None:
    """Wait for a timer of ``SPECULATION_DELAY`` set now: every one set before has run."""
    ran = asyncio.Event()
    asyncio.get_running_loop().call_later(SPECULATION_DELAY, ran.set)
    await ran.wait()


async def test_hits_in_a_burst_share_one_speculation_timer() -> None:
    backend = CountingBackend(EXPECTED)
    editor = Editor(create_server(backend=backend))
    await editor.start()
    options = {"speculative": {"enabled": True}, "cache": {"l2": "none"}}
    editor.notify(types.WORKSPACE_DID_CHANGE_CONFIGURATION, {"settings": {"scopecache": options}})
    await editor.answer(editor.request(INLINE, PARAMS))  # the miss fills L1
    await _timers_due_by_now_have_run()
    reads = backend.reads
    for _ in range(BURST):
        answer = editor.writer.answer(editor.request(INLINE, PARAMS))
        assert answer is not None and answer["result"]["items"]  # hits, answered at once
    await _timers_due_by_now_have_run()
    assert backend.reads - reads == 1


async def test_a_hit_after_the_timer_ran_gets_a_timer_of_its_own() -> None:
    backend = CountingBackend(EXPECTED)
    editor = Editor(create_server(backend=backend))
    await editor.start()
    options = {"speculative": {"enabled": True}, "cache": {"l2": "none"}}
    editor.notify(types.WORKSPACE_DID_CHANGE_CONFIGURATION, {"settings": {"scopecache": options}})
    await editor.answer(editor.request(INLINE, PARAMS))
    await _timers_due_by_now_have_run()
    reads = backend.reads
    for _ in range(2):
        assert editor.writer.answer(editor.request(INLINE, PARAMS)) is not None
        await _timers_due_by_now_have_run()
    assert backend.reads - reads == 2

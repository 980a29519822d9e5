"""A full collector pass in a working server process, with and without a settled heap.

Run as its own process by ``bench_server`` (so nothing of the benchmark's is
on the heap), once with ``--settle`` and once without. The real server is
started in process with a ``StaticBackend`` and driven as an editor would
drive it (frames go in through ``dispatch_body``, answers to a writer that
counts them): ``initialize``, ``initialized``, then, with ``--settle``, the
heap is settled as ``scopecache serve`` settles it at the end of start-up.
Then every shipped sample file is opened and an inline completion asked at
the end of every ``STRIDE``-th line, each answer a new L1 entry. Last,
``gc.collect()`` is timed ``PASSES`` times. Prints one JSON object: the
median milliseconds of a full pass, the L1 entries, the objects frozen.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import json
import statistics
import sys
import time
from typing import Any

from lsp_server import create_server
from lsp_server.documents.languages import default_registry
from lsp_server.kit.synth.session import language_samples
from lsp_server.server.framing import dispatch_body
from lsp_server.server.heap import settle_heap
from transport import StaticBackend
from transport.backend import CompletionRequest

#: full passes timed
PASSES = 7
#: an inline completion asked as the editor asks it while the user types
AUTOMATIC = {"triggerKind": 2}
#: every how many lines of a sample a completion is asked
STRIDE = 3


class CountingWriter:
    """Where the server's frames go: counted, then dropped."""

    def __init__(self) -> None:
        self.frames = 0

    def write(self, data: bytes) -> None:
        self.frames += 1

    def close(self) -> None:
        pass


def _body(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode()


def _full_pass_ms() -> float:
    timings = []
    for _ in range(PASSES):
        started = time.perf_counter()
        gc.collect()
        timings.append((time.perf_counter() - started) * 1000.0)
    return statistics.median(timings)


async def _answered(writer: CountingWriter, frames: int) -> None:
    """Let the loop run until the writer has seen ``frames`` frames."""
    while writer.frames < frames:
        await asyncio.sleep(0)


async def probe(settle: bool) -> dict[str, Any]:
    """Start, settle or not, work, then time full passes."""
    numbers = itertools.count()

    def answer(_request: CompletionRequest) -> str:
        return f"value_{next(numbers)}()"

    server = create_server(backend=StaticBackend(answer, chunk_size=64))
    protocol = server.protocol
    writer = CountingWriter()
    protocol.set_writer(writer)
    init = {"processId": None, "capabilities": {"textDocument": {"inlineCompletion": {}}}}
    dispatch_body(protocol, _body({"id": 0, "method": "initialize", "params": init}))
    dispatch_body(protocol, _body({"method": "initialized", "params": {}}))
    await _answered(writer, 1)
    # the end of start-up, queued at initialized, installs the collector's timer
    while server.collector not in gc.callbacks:
        await asyncio.sleep(0)
    frozen = settle_heap() if settle else 0
    languages = default_registry()
    ids = itertools.count(1)
    for path in language_samples():
        text = path.read_text(encoding="utf-8")
        uri = path.as_uri()
        item = {"uri": uri, "languageId": languages.language_id_for(str(path)), "version": 1}
        opened = {"textDocument": {**item, "text": text}}
        dispatch_body(protocol, _body({"method": "textDocument/didOpen", "params": opened}))
        for line, content in enumerate(text.splitlines()[::STRIDE]):
            position = {"line": line * STRIDE, "character": len(content)}
            params = {"textDocument": {"uri": uri}, "position": position, "context": AUTOMATIC}
            request = {"id": next(ids), "method": "textDocument/inlineCompletion", "params": params}
            frames = writer.frames
            dispatch_body(protocol, _body(request))
            await _answered(writer, frames + 1)
    result = {"fullPassMs": _full_pass_ms(), "entries": len(server.store), "frozen": frozen}
    server.collector.uninstall()
    return result


if __name__ == "__main__":
    print(json.dumps(asyncio.run(probe("--settle" in sys.argv))))

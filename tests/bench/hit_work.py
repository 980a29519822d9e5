"""The hit path's own work, counted rather than timed: opcodes per hit.

A loaded machine makes wall time a poor judge of a small cut; the work a
hit does is repeatable. The server runs in process with the settings a user
gets (speculation on, throttle and L2 as they default, the SQLite L2 in a
file of the run's own) and ``StaticBackend`` at the transport seam; each
message goes to the protocol as the frame reader hands it on
(``ScopecacheProtocol.receive``), and a writer keeps the answer. Two hits,
as ``bench_hitpath`` asks them:

* repeated: the same request at the same place;
* typed: the cached suggestion typed character by character, an edit
  before every request (``bench_hitpath.TypedStream``).

Between hits the loop runs idle for ``PAUSE`` (as typing leaves between
keys), so what a hit schedules after its answer runs before the next one.

Printed per kind: the Python opcodes run from the request's arrival to its
answer's write (``to write``), and in the whole ``receive`` call (``call``),
with the modules where the most run (``--by-file``); for the typed hit also
those of the edit before it (``edit``: the didChange, handled as it is read,
which an editor sends just before its request); and a ``$/cancelRequest``
for a request already answered (an editor sends one at every key while a
miss waits), counted by itself (``cancel``). With ``--loop N`` it
runs N steps of one kind uncounted instead, for an instruction count:
``valgrind --tool=callgrind`` of ``--loop N --ask`` less that of the same
steps' edits alone (``--no-ask``), divided by N, speculation off in both
(``--callgrind N`` does both runs per kind and prints that; N a multiple
of 24, whole typed cycles). It covers the
request from its parsed JSON to the written answer, and the bookkeeping the
hit leaves for just after it.

Run: ``.venv/bin/python -m tests.bench.hit_work [--by-file] [--callgrind 240]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from lsprotocol import types

from lsp_server import create_server
from lsp_server.server.protocol import ScopecacheProtocol
from tests.bench.bench_hitpath import SUGGESTION, TYPED_URI
from tests.bench.bench_server import COL, LINE, TEXT, URI
from transport.backend import StaticBackend

#: seconds idle between hits, as typing leaves between keys
PAUSE = 0.03
#: hits of each kind counted (after warming), averaged: one whole typed cycle
COUNTED = 24
#: hits of each kind before counting: the caches and memos a session has warm
WARM = 30
INLINE = types.TEXT_DOCUMENT_INLINE_COMPLETION


class Writer:
    """Keeps the last message written; marks the write for the opcode counter."""

    def __init__(self) -> None:
        self.last: bytes = b""
        self.writes = 0

    def write(self, data: bytes) -> None:
        self.last = data
        self.writes += 1

    def close(self) -> None:
        pass

    def result(self) -> Any:
        return json.loads(self.last.split(b"\r\n\r\n", 1)[1]).get("result")


class InProcess:
    """The server in process, fed messages as its frame reader feeds them."""

    def __init__(self, sqlite_path: Path, *, speculative: bool = True) -> None:
        self.server = create_server(backend=StaticBackend(SUGGESTION))
        protocol = self.server.protocol
        assert isinstance(protocol, ScopecacheProtocol)
        self.protocol = protocol
        self.writer = Writer()
        protocol.set_writer(self.writer)
        self.sqlite_path = sqlite_path
        self.speculative = speculative
        self._ids = 0
        self._versions = {URI: 1, TYPED_URI: 1}
        self.typed = 0

    def message(self, method: str, params: Any) -> dict[str, Any]:
        self._ids += 1
        return {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}

    def notify(self, method: str, params: Any) -> None:
        self.protocol.receive({"jsonrpc": "2.0", "method": method, "params": params})

    async def answer(self, method: str, params: Any) -> Any:
        before = self.writer.writes
        self.protocol.receive(self.message(method, params))
        while self.writer.writes == before:
            await asyncio.sleep(0.001)
        return self.writer.result()

    async def start(self) -> None:
        options: dict[str, Any] = {"cache": {"sqlitePath": str(self.sqlite_path)}}
        if not self.speculative:
            options["speculative"] = {"enabled": False}
        init: dict[str, Any] = {
            "processId": None,
            "capabilities": {"textDocument": {"inlineCompletion": {}}},
            "initializationOptions": options,
        }
        await self.answer(types.INITIALIZE, init)
        self.notify(types.INITIALIZED, {})
        for uri in (URI, TYPED_URI):
            document = {"uri": uri, "languageId": "python", "version": 1, "text": TEXT}
            self.notify(types.TEXT_DOCUMENT_DID_OPEN, {"textDocument": document})
            first = await self.answer(INLINE, inline_params(uri, COL))  # the miss fills L1
            assert _text(first) == SUGGESTION, first

    def advance(self) -> None:
        """The typed stream's next edit (as ``bench_hitpath.TypedStream.advance``)."""
        if self.typed == len(SUGGESTION) - 2:
            self._change((LINE, COL), (LINE, COL + self.typed), "")
            self.typed = 0
            return
        at = (LINE, COL + self.typed)
        self._change(at, at, SUGGESTION[self.typed])
        self.typed += 1

    def _change(self, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        self._versions[TYPED_URI] += 1
        span = {
            "start": {"line": start[0], "character": start[1]},
            "end": {"line": end[0], "character": end[1]},
        }
        self.notify(
            types.TEXT_DOCUMENT_DID_CHANGE,
            {
                "textDocument": {"uri": TYPED_URI, "version": self._versions[TYPED_URI]},
                "contentChanges": [{"range": span, "text": text}],
            },
        )

    def request(self, kind: str) -> dict[str, Any]:
        """The next request of ``kind`` (a typed one after its edit)."""
        if kind == "typed":
            self.advance()
        return self.ask(kind)

    def ask(self, kind: str) -> dict[str, Any]:
        """The request of ``kind`` at the current step (no edit)."""
        if kind == "repeated":
            return self.message(INLINE, inline_params(URI, COL))
        return self.message(INLINE, inline_params(TYPED_URI, COL + self.typed))

    def expected(self, kind: str) -> str:
        return SUGGESTION if kind == "repeated" else SUGGESTION[self.typed :]


def inline_params(uri: str, character: int) -> dict[str, Any]:
    return {
        "textDocument": {"uri": uri},
        "position": {"line": LINE, "character": character},
        "context": {"triggerKind": 2},
    }


def _text(result: Any) -> str:
    items = result.get("items") if isinstance(result, dict) else None
    return str(items[0].get("insertText", "")) if items else ""


class OpcodeCount:
    """Opcodes run under ``sys.settrace``, per file, and how many ran before the write."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.total = 0
        self.to_write = 0
        self.by_file: Counter[str] = Counter()

    def _trace(self, frame: FrameType, event: str, _arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            self.total += 1
            self.by_file[frame.f_code.co_filename] += 1
            if not self.writer.writes:
                self.to_write += 1
        return self._trace

    def run(self, protocol: ScopecacheProtocol, message: dict[str, Any]) -> None:
        self.writer.writes = 0
        self.call(lambda: protocol.receive(message))

    def call(self, work: Callable[[], None]) -> None:
        """Count the opcodes ``work`` runs."""
        sys.settrace(self._trace)
        try:
            work()
        finally:
            sys.settrace(None)


async def count(by_file: bool) -> dict[str, dict[str, float]]:
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="scopecache-hitwork-") as tmp:
        server = InProcess(Path(tmp) / "l2.sqlite")
        await server.start()
        for kind in ("repeated", "typed"):
            for _ in range(WARM):
                await _hit(server, kind)
            counts = []
            edits = 0
            files: Counter[str] = Counter()
            for _ in range(COUNTED):
                if kind == "typed":
                    edit = OpcodeCount(server.writer)
                    edit.call(server.advance)
                    edits += edit.total
                message = server.ask(kind)
                counter = OpcodeCount(server.writer)
                counter.run(server.protocol, message)
                assert server.writer.writes == 1, "not answered on the immediate route"
                assert _text(server.writer.result()) == server.expected(kind)
                counts.append((counter.to_write, counter.total))
                files.update(counter.by_file)
                await asyncio.sleep(PAUSE)
            figures[kind] = {
                "to write": sum(c[0] for c in counts) / COUNTED,
                "call": sum(c[1] for c in counts) / COUNTED,
                "spread": max(c[0] for c in counts) - min(c[0] for c in counts),
                "edit": edits / COUNTED,
            }
            if by_file:
                print(f"{kind}: opcodes per hit by file")
                for name, n in files.most_common(60):
                    print(f"  {n / COUNTED:8.1f}  {_short(name)}")
        cancels = 0
        for msg_id in range(1, COUNTED + 1):  # every one answered by now
            counter = OpcodeCount(server.writer)
            message = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}}
            counter.run(server.protocol, message)
            cancels += counter.total
        figures["cancel"] = {"call": cancels / COUNTED}
    return figures


async def _hit(server: InProcess, kind: str) -> None:
    server.writer.writes = 0
    server.protocol.receive(server.request(kind))
    assert server.writer.writes == 1, "not answered on the immediate route"
    await asyncio.sleep(PAUSE)


async def loop(kind: str, hits: int, ask: bool) -> None:
    """``hits`` steps of ``kind`` after warming, each asked only with ``ask`` (edits still made).

    Speculation is off: what a hit schedules after its answer is not its own
    work, and with it the two runs would differ by more than their requests.
    """
    with tempfile.TemporaryDirectory(prefix="scopecache-hitwork-") as tmp:
        server = InProcess(Path(tmp) / "l2.sqlite", speculative=False)
        await server.start()
        for _ in range(WARM):
            await _hit(server, kind)
        for _ in range(hits):
            message = server.request(kind)
            if ask:
                server.protocol.receive(message)
            await asyncio.sleep(0)


def _short(name: str) -> str:
    parts = Path(name).parts
    for anchor in ("lsp_server", "cache", "transport", "pygls", "asyncio", "json"):
        if anchor in parts:
            return str(Path(*parts[parts.index(anchor) :]))
    return name


def callgrind(kind: str, hits: int) -> float:
    """Instructions per hit of ``kind``: two callgrind runs, with and without the requests."""
    totals = []
    for ask in ("--no-ask", "--ask"):
        with tempfile.TemporaryDirectory(prefix="scopecache-callgrind-") as tmp:
            out = Path(tmp) / "callgrind.out"
            command = [
                "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                sys.executable, "-m", "tests.bench.hit_work", "--loop", str(hits),
                "--kind", kind, ask,
            ]  # fmt: skip
            # one hash seed for both runs: dictionaries laid out alike, counts alike
            env = {**os.environ, "PYTHONHASHSEED": "0"}
            done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
            found = re.search(r"Collected : (\d+)", done.stderr)
            assert found, done.stderr[-2000:]
            totals.append(int(found.group(1)))
    return (totals[1] - totals[0]) / hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--by-file", action="store_true", help="opcodes per module")
    parser.add_argument("--loop", type=int, metavar="N", help="run N steps of --kind, uncounted")
    parser.add_argument("--kind", choices=("repeated", "typed"), default="repeated")
    parser.add_argument("--ask", action=argparse.BooleanOptionalAction, default=True,
                        help="with --loop: ask at each step (else only the edits)")  # fmt: skip
    parser.add_argument("--callgrind", type=int, metavar="N", help="instructions per hit")
    args = parser.parse_args()
    if args.loop is not None:
        asyncio.run(loop(args.kind, args.loop, args.ask))
        return
    if args.callgrind:
        for kind in ("repeated", "typed"):
            per_hit = callgrind(kind, args.callgrind)
            print(f"{kind:9s} instructions per hit (callgrind, {args.callgrind}): {per_hit:,.0f}")
        return
    figures = asyncio.run(count(args.by_file))
    cancel = figures.pop("cancel")
    for kind, figure in figures.items():
        edit = f"  the edit before it {figure['edit']:7.1f}" if figure["edit"] else ""
        print(
            f"{kind:9s} opcodes to write {figure['to write']:7.1f}  "
            f"in the call {figure['call']:7.1f}  (spread {figure['spread']:.0f}){edit}"
        )
    print(f"cancel    opcodes of a $/cancelRequest for an answered id {cancel['call']:7.1f}")


if __name__ == "__main__":
    main()

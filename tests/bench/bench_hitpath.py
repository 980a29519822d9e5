"""The hit path's wire cost: an L1 hit against a plain asyncio JSON-RPC responder.

Three processes are driven side by side over stdio pipes by one lean client
that writes ready-made frames and reads the answer's frame (no LSP library
on the client side, so its own cost does not dilute the ratio):

* ``scopecache serve`` answering an inline completion from L1;
* ``asyncio_responder.py``: asyncio and ``json`` only, answering an item of
  the same shape (the floor of any Python server on this machine);
* ``floor_server.py``: a bare pygls server answering a constant.

Requests are interleaved one by one, so the machine's load drifts over all
three alike, in an order shuffled at every step: with a fixed order each
process would always be asked right after the same other one, and the one
after the bare pygls server (whose reader thread and dispatch leave the
most behind in the processor's caches) would pay for it every time. That
does not cover where the scheduler puts the processes,
which holds for their life: the run is made of rounds (``ROUNDS``), each
with three fresh processes, and their samples are pooled. The rows are the
hit's p50 and p99 against the responder's, and the bare pygls server's p50
against the same responder for scale.

Run: ``.venv/bin/python -m tests.bench.bench_hitpath [--quick]``.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsp_server.kit.client import default_command
from lsp_server.kit.upstream_process import ReferenceProcess
from lsp_server.observe.stats import percentile
from tests.bench.bench_server import LINE, TEXT, URI, _corpus_file, _options
from tests.bench.rows import row

HERE = Path(__file__).resolve().parent
#: seconds to wait for any one answer (the first hit's miss goes upstream)
ANSWER_TIMEOUT = 30.0
#: rounds of fresh processes whose samples are pooled (``--quick``: fewer). Where
#: the scheduler puts three processes on a small machine, and so how fast the
#: responder answers, holds for a process's life and differs between runs by up
#: to a quarter; pooling rounds averages over placements instead of drawing one
ROUNDS = 5
ROUNDS_QUICK = 3
#: seed of the order the three processes are asked in (shuffled at every step)
ORDER_SEED = 31


def frame(message: dict[str, Any]) -> bytes:
    """One base-protocol frame."""
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class WireClient:
    """A language server process driven with raw frames over its stdio pipes."""

    def __init__(self, command: Sequence[str], init_options: dict[str, Any] | None = None) -> None:
        self.command = list(command)
        self.init_options = init_options or {}
        self.proc: asyncio.subprocess.Process | None = None
        self._ids = 0
        self._tmp = tempfile.TemporaryDirectory(prefix="scopecache-hitpath-")

    async def __aenter__(self) -> WireClient:
        log = Path(self._tmp.name) / "server.log"
        self.proc = await asyncio.create_subprocess_exec(
            *self.command, "--log-file", str(log), "--log-level", "INFO",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        await self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "capabilities": {"textDocument": {"inlineCompletion": {}}},
                "initializationOptions": self.init_options,
            },
        )
        self.notify("initialized", {})
        return self

    async def __aexit__(self, *exc: object) -> None:
        proc = self.proc
        if proc is not None and proc.returncode is None:
            try:
                await asyncio.wait_for(self.request("shutdown", None), 5)
                self.notify("exit", None)
                await asyncio.wait_for(proc.wait(), 5)
            except (TimeoutError, OSError):
                proc.kill()
                await proc.wait()
        self._tmp.cleanup()

    def notify(self, method: str, params: Any) -> None:
        """Send a notification."""
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    def open(self, uri: str, text: str) -> None:
        """textDocument/didOpen."""
        item = {"uri": uri, "languageId": "python", "version": 1, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": item})

    async def request(self, method: str, params: Any) -> Any:
        """Send a request and wait for its answer's result."""
        self._ids += 1
        msg_id = self._ids
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(
            frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        )
        return await asyncio.wait_for(self._answer(msg_id), ANSWER_TIMEOUT)

    async def _answer(self, msg_id: int) -> Any:
        while True:
            message = await self._read()
            if message.get("id") == msg_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"error answer: {message['error']}")
                return message.get("result")

    async def _read(self) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        header = await self.proc.stdout.readuntil(b"\r\n\r\n")
        length = 0
        for line in header.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        message: dict[str, Any] = json.loads(await self.proc.stdout.readexactly(length))
        return message

    async def timed_inline(self, uri: str, line: int, character: int) -> tuple[float, Any]:
        """One inline completion request: milliseconds from the write to the answer, and it."""
        params = {
            "textDocument": {"uri": uri},
            "position": {"line": line, "character": character},
            "context": {"triggerKind": 2},
        }
        started = time.perf_counter()
        result = await self.request("textDocument/inlineCompletion", params)
        return (time.perf_counter() - started) * 1000.0, result


def _text(result: Any) -> str:
    items = result.get("items") if isinstance(result, dict) else None
    return str(items[0].get("insertText", "")) if items else ""


async def _round(
    svc: ReferenceProcess, n: int, samples: dict[str, list[float]], order: random.Random
) -> None:
    """One round: three fresh processes, ``n`` interleaved requests each, added to ``samples``.

    At every step the three are asked in an order ``order`` shuffles.
    """
    options = _options(svc, speculative={"enabled": False})
    responder_cmd = [sys.executable, str(HERE / "asyncio_responder.py")]
    pygls_cmd = [sys.executable, str(HERE / "floor_server.py")]
    async with (
        WireClient(responder_cmd) as responder,
        WireClient(pygls_cmd) as bare_pygls,
        WireClient(default_command(), options) as server,
    ):
        clients = {"responder": responder, "pygls": bare_pygls, "hit": server}
        for client in clients.values():
            client.open(URI, TEXT)
        for client in clients.values():  # warm up; the server's first answer fills L1
            for _ in range(50):
                await client.timed_inline(URI, LINE, 14)
        names = list(clients)
        for _ in range(n):
            order.shuffle(names)
            for name in names:
                ms, result = await clients[name].timed_inline(URI, LINE, 14)
                samples[name].append(ms)
                if name == "hit" and not _text(result):
                    raise RuntimeError("the server did not answer from its cache")
        stats = await server.request("scopecache/stats", {})
    if stats["served"].get("upstream", 0) != 1:
        raise RuntimeError(f"expected exactly one upstream answer: {stats['served']}")


async def _measure(quick: bool) -> list[dict[str, Any]]:
    rounds = ROUNDS_QUICK if quick else ROUNDS
    n = (300 if quick else 2000) // rounds
    corpus = HERE.parent.parent / "lsp_server" / "samples"
    samples: dict[str, list[float]] = {"responder": [], "pygls": [], "hit": []}
    order = random.Random(ORDER_SEED)
    async with ReferenceProcess([corpus, _corpus_file()]) as svc:
        for _ in range(rounds):
            await _round(svc, n, samples, order)
    responder_ms, pygls_ms, hit_ms = samples["responder"], samples["pygls"], samples["hit"]
    return [
        row(
            f"hit round trip p{q} vs plain asyncio JSON-RPC responder",
            percentile(hit_ms, q),
            percentile(responder_ms, q),
            "ms",
        )
        for q in (50, 99)
    ] + [
        row(
            "bare pygls constant p50 vs plain asyncio JSON-RPC responder",
            percentile(pygls_ms, 50),
            percentile(responder_ms, 50),
            "ms",
        )
    ]


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Measure and return the rows."""
    return asyncio.run(_measure(quick))


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(row)

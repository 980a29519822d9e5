"""The hit path's wire cost: an L1 hit against plain asyncio JSON-RPC responders.

Four processes are driven side by side over stdio pipes by one lean client
that writes ready-made frames and reads the answer's frame (no LSP library
on the client side, so its own cost does not dilute the ratio):

* ``scopecache serve`` with the settings a user gets (speculation on,
  throttle and L2 as they default: SQLite, in a file of the run's own),
  answering inline completions from memory;
* ``asyncio_responder.py``: asyncio and ``json`` only, answering an item of
  the same shape in the read callback that completed the frame, as the
  server dispatches its frames (the floor any Python server on this machine
  can reach);
* ``asyncio_responder.py --stream-reader``: the same, read by a task with a
  ``StreamReader`` (one task wake-up and loop turn more per message);
* ``floor_server.py``: a bare pygls server answering a constant, for scale.

Two kinds of requests: one request repeated at the same place (an exact
hit whose line the server has just read), and the typed-through stream: the
cached suggestion typed character by character, an edit before every
request, each answered with the rest of it (``TypedStream``). An edit is
read by every process before the clock starts (a round trip no process
knows, before the pause in the paced order), so the rows time the request
alone. A third kind, paced only, is what an editor sends at a key: the
same typed-through stream with the edit written just before the request
and on the clock (``edited``); every process reads the edit, the
responders only parse it.

Three orders, because they give different ratios and an editor sees only
one of them:

* back to back: each process asked ``BACK_TO_BACK`` times in a row, each
  request written as soon as the last answer is read (how a load test, or
  an LSP client of one's own looping over a request, measures);
* shuffled: at every step each process is asked once, in an order shuffled
  at every step (with a fixed order the one after the bare pygls server,
  whose reader thread and dispatch leave the most behind in the
  processor's caches, would pay for it every time);
* paced: as shuffled, with ``PACED_GAP`` before every request, as typing
  leaves between keys: every process waits idle in its loop, and what a
  hit schedules after its answer (the speculative prefetch 5 ms later)
  runs in the pause. This is what an editor sees.

Where the scheduler puts the processes holds for their life: the run is
made of rounds (``ROUNDS``), each with fresh processes, and their samples
are pooled. The rows are the hit's p50 against each responder's, per kind
and order, the hit's p99 (shuffled), and the bare pygls server's p50.

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
from typing import Any, NamedTuple

from lsp_server.kit.client import default_command
from lsp_server.kit.upstream_process import ReferenceProcess
from lsp_server.observe.stats import percentile
from tests.bench.bench_server import COL, LINE, TEXT, URI, _corpus_file
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
#: seed of the order the processes are asked in (shuffled at every step)
ORDER_SEED = 31
#: requests each process is asked back to back in a round (``--quick``: fewer)
BACK_TO_BACK = 500
BACK_TO_BACK_QUICK = 200
#: a request no process knows: its answer tells that what was sent before was read
SYNC = "$/hitpath/sync"
#: the typed-through stream: a second document where the cached suggestion is typed
TYPED_URI = "file:///bench/typed.py"
#: what the reference service answers after ``TEXT``, typed character by character
SUGGESTION = '"Hello, " + name.title()'
#: the processes, and how each is started (the server's settings aside)
FLOORS = {
    "responder": [sys.executable, str(HERE / "asyncio_responder.py")],
    "streamreader": [sys.executable, str(HERE / "asyncio_responder.py"), "--stream-reader"],
    "pygls": [sys.executable, str(HERE / "floor_server.py")],
}
#: the paced order: a pause before every request, as typing leaves between keys,
#: long enough for what a hit schedules (the speculative prefetch) to run in it
PACED_GAP = 0.03
#: paced requests to each process in a round (``--quick``: fewer)
PACED = 60
PACED_QUICK = 30
KINDS = ("repeated", "typed", "edited")
ORDERS = ("back to back", "shuffled", "paced")
#: the orders each kind is asked in: an edit on the clock only as an editor sends it
ORDERS_OF = {"repeated": ORDERS, "typed": ORDERS, "edited": ("paced",)}
#: how each kind is named in the rows
KIND_NAMES = {
    "repeated": "one repeated request",
    "typed": "typed-through, edit before each",
    "edited": "typed-through, the edit on the clock",
}


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
        self._version = 1
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

    def change(self, uri: str, start: tuple[int, int], end: tuple[int, int], text: str) -> None:
        """textDocument/didChange: one incremental edit."""
        self._version += 1
        edit = {
            "range": {
                "start": {"line": start[0], "character": start[1]},
                "end": {"line": end[0], "character": end[1]},
            },
            "text": text,
        }
        document = {"uri": uri, "version": self._version}
        self.notify("textDocument/didChange", {"textDocument": document, "contentChanges": [edit]})

    async def sync(self) -> None:
        """A round trip no process knows (an error answer, or null): what was sent is read."""
        await self.request(SYNC, None, errors=True)

    async def request(self, method: str, params: Any, *, errors: bool = False) -> Any:
        """Send a request and wait for its answer's result (``errors``: or its error)."""
        self._ids += 1
        msg_id = self._ids
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(
            frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        )
        return await asyncio.wait_for(self._answer(msg_id, errors), ANSWER_TIMEOUT)

    async def _answer(self, msg_id: int, errors: bool) -> Any:
        while True:
            message = await self._read()
            if message.get("id") == msg_id and "method" not in message:
                if "error" in message and not errors:
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

    async def timed_inline(
        self, uri: str, line: int, character: int, started: float | None = None
    ) -> tuple[float, Any]:
        """An inline completion request: ms from its write (or ``started``) to the answer."""
        params = {
            "textDocument": {"uri": uri},
            "position": {"line": line, "character": character},
            "context": {"triggerKind": 2},
        }
        if started is None:
            started = time.perf_counter()
        result = await self.request("textDocument/inlineCompletion", params)
        return (time.perf_counter() - started) * 1000.0, result


def _text(result: Any) -> str:
    items = result.get("items") if isinstance(result, dict) else None
    return str(items[0].get("insertText", "")) if items else ""


def user_settings(svc: ReferenceProcess, sqlite_path: Path) -> dict[str, Any]:
    """What a user gets: the defaults (speculation on, throttle and L2 as they default).

    Only the endpoint and its certificate are set, and the SQLite L2 (the
    default tier) is a file of the run's own rather than the user's.
    """
    return {
        "endpoint": svc.url,
        "model": "bench",
        "transport": {"caFile": svc.ca_file},
        "cache": {"sqlitePath": str(sqlite_path)},
    }


class TypedStream:
    """One process's place in the typed-through stream.

    Step ``k`` has the first ``k`` characters of ``SUGGESTION`` typed after
    ``TEXT`` (each an edit), and asks at the end of them: a typed-through
    hit; when two characters are left (one alone is too short to show) the
    typed text is deleted in one edit and step 0 asks again (an exact hit).
    """

    def __init__(self, client: WireClient) -> None:
        self.client = client
        self.typed = 0

    def advance(self) -> None:
        """The edit to the next step's text."""
        if self.typed == len(SUGGESTION) - 2:
            self.client.change(TYPED_URI, (LINE, COL), (LINE, COL + self.typed), "")
            self.typed = 0
            return
        at = (LINE, COL + self.typed)
        self.client.change(TYPED_URI, at, at, SUGGESTION[self.typed])
        self.typed += 1

    @property
    def column(self) -> int:
        """The cursor's column at this step."""
        return COL + self.typed


async def _ask(
    client: WireClient, stream: TypedStream, kind: str, gap: float = 0.0
) -> tuple[float, Any]:
    """One timed request of ``kind`` after ``gap`` seconds idle.

    A typed step's edit is read before the pause (and the clock) starts; an
    edited step's is written after the pause, on the clock, just before the
    request.
    """
    if kind == "edited":
        if gap:
            await asyncio.sleep(gap)
        started = time.perf_counter()
        stream.advance()
        return await client.timed_inline(TYPED_URI, LINE, stream.column, started)
    if kind == "typed":
        stream.advance()
        await client.sync()
    if gap:
        await asyncio.sleep(gap)
    if kind == "repeated":
        return await client.timed_inline(URI, LINE, COL)
    return await client.timed_inline(TYPED_URI, LINE, stream.column)


Samples = dict[tuple[str, str, str], list[float]]


class Counts(NamedTuple):
    """Requests to each process in one round, per order."""

    shuffled: int
    back_to_back: int
    paced: int


async def _round(
    svc: ReferenceProcess, counts: Counts, samples: Samples, order: random.Random
) -> None:
    """One round: fresh processes; each kind asked in every order, added to ``samples``.

    Back to back: each process in turn is asked ``counts.back_to_back``
    times in a row. Shuffled: at every step each process is asked once, in
    an order ``order`` shuffles. Paced: as shuffled, with ``PACED_GAP``
    before each request.
    """
    with tempfile.TemporaryDirectory(prefix="scopecache-hitpath-l2-") as l2_dir:
        options = user_settings(svc, Path(l2_dir) / "l2.sqlite")
        async with (
            WireClient(FLOORS["responder"]) as responder,
            WireClient(FLOORS["streamreader"]) as streamreader,
            WireClient(FLOORS["pygls"]) as bare_pygls,
            WireClient(default_command(), options) as server,
        ):
            clients = {
                "responder": responder,
                "streamreader": streamreader,
                "pygls": bare_pygls,
                "hit": server,
            }
            streams = {name: TypedStream(client) for name, client in clients.items()}
            for client in clients.values():
                client.open(URI, TEXT)
                client.open(TYPED_URI, TEXT)
            for client in clients.values():  # warm up; the server's first answers fill L1
                for _ in range(50):
                    await client.timed_inline(URI, LINE, COL)
                    await client.timed_inline(TYPED_URI, LINE, COL)
            names = list(clients)
            for kind in KINDS:
                order.shuffle(names)
                if "back to back" in ORDERS_OF[kind]:
                    for name in names:
                        for _ in range(counts.back_to_back):
                            ms, result = await _ask(clients[name], streams[name], kind)
                            _keep(samples, (name, kind, "back to back"), ms, result)
                for how, steps, gap in (
                    ("shuffled", counts.shuffled, 0.0),
                    ("paced", counts.paced, PACED_GAP),
                ):
                    if how not in ORDERS_OF[kind]:
                        continue
                    for _ in range(steps):
                        order.shuffle(names)
                        for name in names:
                            ms, result = await _ask(clients[name], streams[name], kind, gap)
                            _keep(samples, (name, kind, how), ms, result)
            stats = await server.request("scopecache/stats", {})
    served = stats["served"]
    if served.get("typed", 0) < counts.back_to_back:
        raise RuntimeError(f"the typed stream was not served typed-through: {served}")


def _keep(samples: Samples, key: tuple[str, str, str], ms: float, result: Any) -> None:
    if key[0] == "hit" and not _text(result):
        raise RuntimeError(f"the server did not answer from its cache ({key[1]}, {key[2]})")
    samples.setdefault(key, []).append(ms)


async def _measure(quick: bool) -> list[dict[str, Any]]:
    rounds = ROUNDS_QUICK if quick else ROUNDS
    counts = Counts(
        shuffled=(300 if quick else 2000) // rounds,
        back_to_back=BACK_TO_BACK_QUICK if quick else BACK_TO_BACK,
        paced=PACED_QUICK if quick else PACED,
    )
    corpus = HERE.parent.parent / "lsp_server" / "samples"
    samples: Samples = {}
    order = random.Random(ORDER_SEED)
    async with ReferenceProcess([corpus, _corpus_file()]) as svc:
        for _ in range(rounds):
            await _round(svc, counts, samples, order)
    return rows_of(samples)


def rows_of(samples: Samples) -> list[dict[str, Any]]:
    """The rows: the hit's p50 against each responder, per kind and order; then scale rows."""
    out = []
    for kind in KINDS:
        what = KIND_NAMES[kind]
        for how in ORDERS_OF[kind]:
            hit = samples[("hit", kind, how)]
            for floor, label in (("responder", "callback"), ("streamreader", "StreamReader")):
                out.append(
                    row(
                        f"hit p50 vs asyncio responder ({label}), {what}, {how}, default settings",
                        percentile(hit, 50),
                        percentile(samples[(floor, kind, how)], 50),
                        "ms",
                    )
                )
    out.append(
        row(
            "hit p99 vs asyncio responder (callback), one repeated request, shuffled",
            percentile(samples[("hit", "repeated", "shuffled")], 99),
            percentile(samples[("responder", "repeated", "shuffled")], 99),
            "ms",
        )
    )
    out.append(
        row(
            "bare pygls constant p50 vs asyncio responder (callback), shuffled",
            percentile(samples[("pygls", "repeated", "shuffled")], 50),
            percentile(samples[("responder", "repeated", "shuffled")], 50),
            "ms",
        )
    )
    return out


def run(quick: bool = False) -> list[dict[str, Any]]:
    """Measure and return the rows."""
    return asyncio.run(_measure(quick))


if __name__ == "__main__":
    for measured in run("--quick" in sys.argv):
        print(measured)

"""Hostile protocol input against the real ``scopecache serve`` process, byte by byte.

The server is spawned with asyncio subprocess pipes so a test can write what
no well-behaved client library would: wrong Content-Length, bodies that are
not JSON, a JSON-RPC batch, NUL bytes, binary junk. After every case the
server must still answer ``scopecache/stats`` and its resident memory must
stay bounded. Each case's RSS before/after is appended as a JSON line to
``$SCOPECACHE_ROBUSTNESS_REPORT`` when that variable is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.client import default_command

pytestmark = pytest.mark.e2e

URI = "file:///work/project/app.py"
ANSWER_TIMEOUT = 20.0
MB = 1024 * 1024


def frame(body: bytes | dict[str, Any] | list[Any], length: int | str | None = None) -> bytes:
    """One base-protocol frame; ``length`` overrides the true Content-Length."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    declared = len(data) if length is None else length
    return f"Content-Length: {declared}\r\n\r\n".encode() + data


def rss_kb(pid: int) -> int:
    """Resident set size of a process in KiB, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


class RawServer:
    """A ``scopecache serve`` process driven with raw bytes on its stdin."""

    def __init__(self, log_file: Path) -> None:
        self.log_file = log_file
        self.proc: asyncio.subprocess.Process | None = None
        self.notifications: list[dict[str, Any]] = []
        self._ids = 0

    async def start(self) -> None:
        with open(self.log_file.with_suffix(".stderr"), "wb") as stderr:
            self.proc = await asyncio.create_subprocess_exec(
                *default_command(), "--log-file", str(self.log_file), "--log-level", "INFO",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
            )

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def write(self, data: bytes) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    async def send_request(self, method: str, params: Any = None) -> int:
        msg_id = self.next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.write(frame(message))
        return msg_id

    async def notify(self, method: str, params: Any) -> None:
        await self.write(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    async def read_message(self) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        length = None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                raise EOFError("server closed its stdout")
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
            elif not line.strip() and length is not None:
                break
        message: dict[str, Any] = json.loads(await self.proc.stdout.readexactly(length))
        return message

    async def answer(self, msg_id: int | str | None) -> dict[str, Any]:
        """The next answer with ``msg_id`` (None: an error answer with ``"id": null``)."""

        async def wait() -> dict[str, Any]:
            while True:
                message = await self.read_message()
                if "method" in message:
                    self.notifications.append(message)
                    continue
                if message.get("id") == msg_id:
                    return message

        return await asyncio.wait_for(wait(), ANSWER_TIMEOUT)

    async def request(self, method: str, params: Any = None) -> dict[str, Any]:
        return await self.answer(await self.send_request(method, params))

    async def initialize(self) -> None:
        answer = await self.request(
            "initialize",
            {"processId": os.getpid(), "capabilities": {}, "initializationOptions": {}},
        )
        assert "result" in answer, answer
        await self.notify("initialized", {})

    async def stats(self) -> dict[str, Any]:
        answer = await self.request("scopecache/stats")
        assert "result" in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    async def stop(self) -> None:
        if self.proc is None:
            return
        if self.alive():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.request("shutdown"), 5)
                await self.notify("exit", None)
                self.proc.stdin.close()  # type: ignore[union-attr]
            try:
                await asyncio.wait_for(self.proc.wait(), 5)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


@pytest.fixture
async def raw(tmp_path: Path) -> AsyncIterator[RawServer]:
    server = RawServer(tmp_path / "server.log")
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


async def first_look_done(server: RawServer) -> None:
    """Wait until the server has looked for a local completion server once.

    With no endpoint set, the server looks on loopback from ``initialized`` on;
    its first look loads the HTTP client's code once. Memory is measured from
    there on, so a case's bound holds the case and the later looks, not that
    one-time load.
    """

    async def looked() -> None:
        while (await server.stats())["endpoint"].get("probes", 0) < 1:
            pass

    await asyncio.wait_for(looked(), ANSWER_TIMEOUT)


@pytest.fixture
async def ready(raw: RawServer) -> RawServer:
    await raw.initialize()
    await first_look_done(raw)
    return raw


async def still_serving(server: RawServer, case: str, rss_before: int, bound_mb: float) -> None:
    """The server answers stats, and its RSS grew by less than ``bound_mb``."""
    stats = await server.stats()
    assert isinstance(stats["requests"], int)
    rss_after = rss_kb(server.pid)
    report = os.environ.get("SCOPECACHE_ROBUSTNESS_REPORT")
    if report:
        with open(report, "a") as fh:
            row = {"case": case, "rssBeforeKb": rss_before, "rssAfterKb": rss_after}
            fh.write(json.dumps(row) + "\n")
    assert rss_after - rss_before < bound_mb * 1024, (case, rss_before, rss_after)


# -- framing and JSON --------------------------------------------------------


async def test_body_that_is_not_json_gets_a_parse_error_with_null_id(ready: RawServer) -> None:
    before = rss_kb(ready.pid)
    await ready.write(frame(b'{"jsonrpc": "2.0", "id": 5, "method": '))
    answer = await ready.answer(None)
    assert answer["error"]["code"] == -32700
    assert answer["jsonrpc"] == "2.0" and answer["id"] is None
    await still_serving(ready, "invalid JSON", before, 20)


async def test_json_array_batch_is_refused_as_invalid_request(ready: RawServer) -> None:
    before = rss_kb(ready.pid)
    batch = [{"jsonrpc": "2.0", "id": 90, "method": "scopecache/stats"}] * 2
    await ready.write(frame(batch))
    answer = await ready.answer(None)
    assert answer["error"]["code"] == -32600
    await still_serving(ready, "JSON array (batch)", before, 20)


async def test_json_that_is_not_a_jsonrpc_object_is_an_invalid_request(ready: RawServer) -> None:
    before = rss_kb(ready.pid)
    await ready.write(frame(b"42"))
    assert (await ready.answer(None))["error"]["code"] == -32600
    await ready.write(frame({"id": 77, "method": "scopecache/stats"}))  # no "jsonrpc"
    assert (await ready.answer(77))["error"]["code"] == -32600
    await still_serving(ready, "non-JSON-RPC values", before, 20)


async def test_too_short_content_length_answers_a_parse_error_then_resynchronises(
    ready: RawServer,
) -> None:
    before = rss_kb(ready.pid)
    body = json.dumps({"jsonrpc": "2.0", "id": 31, "method": "scopecache/stats"}).encode()
    follow_up = {"jsonrpc": "2.0", "id": 32, "method": "scopecache/stats"}
    await ready.write(frame(body, length=len(body) - 10) + frame(follow_up))
    assert (await ready.answer(None))["error"]["code"] == -32700
    # The message right after the broken one is not lost.
    assert "result" in await ready.answer(32)
    await still_serving(ready, "Content-Length too short", before, 20)


async def test_too_long_content_length_costs_only_the_swallowed_message(
    ready: RawServer,
) -> None:
    before = rss_kb(ready.pid)
    body = json.dumps({"jsonrpc": "2.0", "id": 41, "method": "scopecache/stats"}).encode()
    swallowed = {"jsonrpc": "2.0", "id": 42, "method": "scopecache/stats"}
    after = {"jsonrpc": "2.0", "id": 43, "method": "scopecache/stats"}
    await ready.write(frame(body, length=len(body) + 30) + frame(swallowed) + frame(after))
    assert (await ready.answer(None))["error"]["code"] == -32700
    assert "result" in await ready.answer(43)
    await still_serving(ready, "Content-Length too long", before, 20)


async def test_non_numeric_content_length_is_a_parse_error_and_the_body_is_skipped(
    ready: RawServer,
) -> None:
    before = rss_kb(ready.pid)
    body = {"jsonrpc": "2.0", "id": 51, "method": "scopecache/stats"}
    await ready.write(frame(body, length="twelve") + frame({**body, "id": 52}))
    assert (await ready.answer(None))["error"]["code"] == -32700
    assert "result" in await ready.answer(52)
    await still_serving(ready, "Content-Length not a number", before, 20)


async def test_huge_declared_length_is_refused_without_buffering(ready: RawServer) -> None:
    before = rss_kb(ready.pid)
    await ready.write(b"Content-Length: 99999999999\r\n\r\n" + b"x" * 100_000)
    assert (await ready.answer(None))["error"]["code"] == -32600
    await ready.write(b"\r\n")  # the junk body ends; the next frame is found
    await still_serving(ready, "Content-Length 99999999999", before, 20)


async def test_binary_garbage_and_nul_bytes_do_not_stop_the_server(ready: RawServer) -> None:
    before = rss_kb(ready.pid)
    junk = bytes(range(256)) * 64 + b"\x00" * 10_000 + b"\r\n\r\n"
    await ready.write(junk)
    await ready.write(frame(b"\x00\xff\xfe{not json}\x00"))
    assert (await ready.answer(None))["error"]["code"] == -32700
    # NUL characters inside a valid document are text like any other.
    await ready.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1,
                          "text": "x = 1\x00\x00\ndef f(\x00):\n    return \x00"}},
    )
    answer = await ready.request(
        "textDocument/inlineCompletion",
        {"textDocument": {"uri": URI}, "position": {"line": 2, "character": 11},
         "context": {"triggerKind": 2}},
    )
    assert answer["result"]["items"] == []
    await still_serving(ready, "binary junk, NUL bytes", before, 20)


# -- JSON-RPC and LSP semantics ---------------------------------------------


async def test_unknown_request_is_method_not_found_and_unknown_notification_ignored(
    ready: RawServer,
) -> None:
    before = rss_kb(ready.pid)
    answer = await ready.request("scopecache/noSuchThing", {"x": 1})
    assert answer["error"]["code"] == -32601
    await ready.notify("scopecache/noSuchNotification", {"x": 1})
    await ready.notify("$/somethingOptional", {})
    await still_serving(ready, "unknown methods", before, 20)


async def test_requests_before_initialize_get_server_not_initialized(raw: RawServer) -> None:
    answer = await raw.request("scopecache/stats")
    assert answer["error"]["code"] == -32002
    before = rss_kb(raw.pid)  # the process is up now
    answer = await raw.request("textDocument/inlineCompletion", {"bogus": True})
    assert answer["error"]["code"] == -32002
    # A notification before initialize is dropped, as LSP says.
    await raw.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": "x"}},
    )
    await raw.initialize()
    stats = await raw.stats()
    assert stats["documents"] == 0
    await still_serving(raw, "requests before initialize", before, 40)


async def test_wrong_param_types_get_invalid_params(ready: RawServer) -> None:
    before = rss_kb(ready.pid)
    answer = await ready.request(
        "textDocument/inlineCompletion",
        {"textDocument": {"uri": URI}, "position": {"line": "two", "character": []},
         "context": {"triggerKind": 2}},
    )
    assert answer["error"]["code"] == -32602
    answer = await ready.request("textDocument/completion", {"textDocument": 7})
    assert answer["error"]["code"] == -32602
    # A notification with bad params is dropped without an answer.
    await ready.notify("textDocument/didChange", {"textDocument": "nope"})
    await still_serving(ready, "wrong param types", before, 20)


async def test_positions_out_of_range_get_empty_answers(ready: RawServer) -> None:
    before = rss_kb(ready.pid)
    await ready.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1,
                          "text": "def f():\n    return 1\n"}},
    )
    for line, character in ((0, 10_000), (10_000, 0), (2_000_000_000, 2_000_000_000)):
        for method, params in (
            ("textDocument/inlineCompletion", {"context": {"triggerKind": 2}}),
            ("textDocument/completion", {}),
        ):
            answer = await ready.request(
                method,
                {"textDocument": {"uri": URI},
                 "position": {"line": line, "character": character}, **params},
            )
            assert answer["result"]["items"] == [], (method, line, character)
    await still_serving(ready, "positions out of range", before, 20)


async def test_twenty_megabyte_document_is_served_but_not_parsed(ready: RawServer) -> None:
    before = rss_kb(ready.pid)
    line = "value = compute(alpha, beta) + 1  # filler\n"
    text = line * (20 * MB // len(line))
    await ready.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": text}},
    )
    last = text.count("\n")
    await ready.notify(
        "textDocument/didChange",
        {"textDocument": {"uri": URI, "version": 2},
         "contentChanges": [{"range": {"start": {"line": last, "character": 0},
                                       "end": {"line": last, "character": 0}},
                             "text": "def tail(x):\n    return "}]},
    )
    answer = await ready.request(
        "textDocument/inlineCompletion",
        {"textDocument": {"uri": URI}, "position": {"line": last + 1, "character": 11},
         "context": {"triggerKind": 2}},
    )
    assert answer["result"]["items"] == []
    assert (await ready.stats())["documents"] == 1
    await ready.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
    log = ready.log_file.read_text()
    assert "not parsing" in log and "too large" in log
    await still_serving(ready, "20 MB document", before, 160)


async def test_flood_of_ten_thousand_changes_with_interleaved_completions(
    ready: RawServer,
) -> None:
    await ready.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": URI, "languageId": "python", "version": 1,
                          "text": "def f():\n    x = "}},
    )
    before = rss_kb(ready.pid)
    burst = bytearray()
    completion_ids = []
    column = 8
    for version in range(2, 10_002):
        position = {"line": 1, "character": column}
        change = {"range": {"start": position, "end": position}, "text": "a"}
        burst += frame({"jsonrpc": "2.0", "method": "textDocument/didChange",
                        "params": {"textDocument": {"uri": URI, "version": version},
                                   "contentChanges": [change]}})
        column += 1
        if version % 100 == 0:
            msg_id = ready.next_id()
            completion_ids.append(msg_id)
            burst += frame({"jsonrpc": "2.0", "id": msg_id,
                            "method": "textDocument/inlineCompletion",
                            "params": {"textDocument": {"uri": URI},
                                       "position": {"line": 1, "character": column},
                                       "context": {"triggerKind": 2}}})
    await ready.write(bytes(burst))
    for msg_id in completion_ids:
        assert "result" in await ready.answer(msg_id)
    stats = await ready.stats()
    assert stats["keystrokes"] == 10_000
    assert stats["requests"] == len(completion_ids)
    # 8 MB: pygls alone keeps one future per didChange (about 21 MB here).
    await still_serving(ready, "10,000 didChange + 100 completions", before, 8)


# tree-sitter-typescript 0.23.2's TSX grammar never finishes parsing this text
# (an upstream bug, tree-sitter-typescript#323)
TSX_LOOP = 'n";/"{({x:d:c f() '


@pytest.mark.timeout(120)
async def test_typing_text_the_tsx_grammar_loops_on_keeps_the_server_answering(
    ready: RawServer,
) -> None:
    uri = "file:///work/project/widget.tsx"
    await ready.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "typescriptreact", "version": 1,
                          "text": ""}},
    )
    before = rss_kb(ready.pid)
    for column, ch in enumerate(TSX_LOOP):
        position = {"line": 0, "character": column}
        await ready.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": column + 2},
             "contentChanges": [{"range": {"start": position, "end": position}, "text": ch}]},
        )
    stats = await ready.stats()
    assert stats["keystrokes"] == len(TSX_LOOP)
    assert stats["languages"]["typescriptreact"]["documents"] == 1
    assert stats["languages"]["typescriptreact"]["text"] == 1
    answer = await ready.request(
        "textDocument/inlineCompletion",
        {"textDocument": {"uri": uri}, "position": {"line": 0, "character": len(TSX_LOOP)},
         "context": {"triggerKind": 2}},
    )
    assert "result" in answer, answer
    log = ready.log_file.read_text()
    assert "seems stuck" in log and "text-only context" in log
    await still_serving(ready, "TSX text the grammar loops on, typed", before, 8)


async def test_server_exits_cleanly_when_input_ends_mid_frame(tmp_path: Path) -> None:
    server = RawServer(Path(tempfile.mkdtemp(dir=tmp_path)) / "server.log")
    await server.start()
    try:
        await server.initialize()
        await server.write(b"Content-Length: 500\r\n\r\n{\"jsonrpc\"")
        assert server.proc is not None and server.proc.stdin is not None
        server.proc.stdin.close()
        await asyncio.wait_for(server.proc.wait(), 10)
    finally:
        await server.stop()

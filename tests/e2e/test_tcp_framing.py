"""``scopecache serve --tcp`` reads frames with the same hardened reader as stdio.

A real server process listens on 127.0.0.1 (port 0: it logs the port it
bound); the test connects with a plain socket and writes what a broken
client would: a body that is not JSON, a JSON-RPC batch, a too-short and a
too-long Content-Length, a header line far longer than any header. Each gets
its JSON-RPC error (or costs only the message it swallowed), and a normal
request afterwards is answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.client import default_command

pytestmark = pytest.mark.e2e

ANSWER_TIMEOUT = 20.0
_LISTENING = re.compile(r"listening on tcp 127\.0\.0\.1:(\d+)")


def frame(body: bytes | dict[str, Any] | list[Any], length: int | None = None) -> bytes:
    """One base-protocol frame; ``length`` overrides the true Content-Length."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return f"Content-Length: {len(data) if length is None else length}\r\n\r\n".encode() + data


def request(msg_id: int, method: str = "scopecache/stats", params: Any = None) -> dict[str, Any]:
    """A JSON-RPC request object."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


class TcpClient:
    """A raw base-protocol connection to the server's TCP port."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_message(self) -> dict[str, Any]:
        length = None
        while True:
            line = await self.reader.readline()
            if not line:
                raise EOFError("server closed the connection")
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
            elif not line.strip() and length is not None:
                break
        message: dict[str, Any] = json.loads(await self.reader.readexactly(length))
        return message

    async def answer(self, msg_id: int | None) -> dict[str, Any]:
        """The next answer with ``msg_id`` (None: an error answer with ``"id": null``)."""

        async def wait() -> dict[str, Any]:
            while True:
                message = await self.read_message()
                if "method" not in message and message.get("id") == msg_id:
                    return message

        return await asyncio.wait_for(wait(), ANSWER_TIMEOUT)


async def listening_port(log_file: Path, proc: asyncio.subprocess.Process) -> int:
    """The port the server logged, once it is listening."""
    for _ in range(int(ANSWER_TIMEOUT / 0.02)):
        if proc.returncode is not None:
            raise AssertionError(f"server exited with {proc.returncode}")
        if log_file.exists():
            match = _LISTENING.search(log_file.read_text())
            if match:
                return int(match.group(1))
        await asyncio.sleep(0.02)
    raise AssertionError("server did not start listening")


@pytest.fixture
async def tcp(tmp_path: Path) -> AsyncIterator[tuple[TcpClient, asyncio.subprocess.Process]]:
    log_file = tmp_path / "server.log"
    proc = await asyncio.create_subprocess_exec(
        *default_command(), "--tcp", "127.0.0.1:0",
        "--log-file", str(log_file), "--log-level", "INFO",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    writer: asyncio.StreamWriter | None = None
    try:
        port = await listening_port(log_file, proc)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        client = TcpClient(reader, writer)
        init = {"processId": os.getpid(), "capabilities": {}}
        await client.write(frame(request(1, "initialize", init)))
        assert "result" in await client.answer(1)
        await client.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        yield client, proc
    finally:
        if writer is not None:
            writer.close()
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


async def test_tcp_answers_bad_frames_with_json_rpc_errors_and_keeps_serving(
    tcp: tuple[TcpClient, asyncio.subprocess.Process],
) -> None:
    client, proc = tcp
    await client.write(frame(b'{"jsonrpc": "2.0", "id": 5, "method": '))
    answer = await client.answer(None)
    assert answer["error"]["code"] == -32700 and answer["id"] is None

    await client.write(frame([request(6), request(7)]))
    assert (await client.answer(None))["error"]["code"] == -32600

    body = json.dumps(request(10)).encode()
    await client.write(frame(body, length=len(body) - 10) + frame(request(11)))
    assert (await client.answer(None))["error"]["code"] == -32700
    assert "result" in await client.answer(11)  # resynchronised at the next header

    await client.write(frame(body, length=len(body) + 30) + frame(request(12)) + frame(request(13)))
    assert (await client.answer(None))["error"]["code"] == -32700
    assert "result" in await client.answer(13)  # only the swallowed message is lost

    # A "header" line of 1 MB without a newline is read in bounded pieces and skipped.
    await client.write(b"X" * (1024 * 1024) + b"\r\n\r\n" + frame(request(14)))
    assert (await client.answer(None))["error"]["code"] == -32700

    await client.write(frame(request(15)))
    stats = (await client.answer(15))["result"]
    assert isinstance(stats["requests"], int)
    assert proc.returncode is None


async def test_tcp_server_exits_when_the_client_says_exit(
    tcp: tuple[TcpClient, asyncio.subprocess.Process],
) -> None:
    client, proc = tcp
    await client.write(frame(request(2, "shutdown")))
    assert "result" in await client.answer(2)
    await client.write(frame({"jsonrpc": "2.0", "method": "exit"}))
    assert await asyncio.wait_for(proc.wait(), ANSWER_TIMEOUT) == 0


async def test_tcp_address_without_a_port_number_is_refused_with_exit_code_2(
    tmp_path: Path,
) -> None:
    log_file = tmp_path / "server.log"
    proc = await asyncio.create_subprocess_exec(
        *default_command(), "--tcp", "127.0.0.1:http", "--log-file", str(log_file),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert await asyncio.wait_for(proc.wait(), ANSWER_TIMEOUT) == 2
    assert "--tcp wants HOST:PORT" in log_file.read_text()

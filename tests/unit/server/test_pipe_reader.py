"""The event-loop stdin reader: what it reads, and when it is (not) used."""

from __future__ import annotations

import asyncio
import io
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.server.framing import (
    MAX_HEADER_LINE,
    BoundedStdinReader,
    PipeLineReader,
    loop_readable,
    open_line_reader,
    read_frames,
)


@pytest.fixture
def pipe() -> Iterator[tuple[io.BufferedReader, int]]:
    """A pipe: the read end as a binary stream, the write end as a raw fd."""
    read_fd, write_fd = os.pipe()
    reader = os.fdopen(read_fd, "rb")
    try:
        yield reader, write_fd
    finally:
        reader.close()
        try:
            os.close(write_fd)
        except OSError:
            pass


class Sink:
    """Collects what the frame reader hands on."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.errors: list[tuple[Any, int]] = []

    def receive(self, data: dict[str, Any]) -> None:
        self.messages.append(data)

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        self.errors.append((msg_id, code))


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_pipes_and_sockets_are_read_on_the_loop(pipe: tuple[io.BufferedReader, int]) -> None:
    reader, _ = pipe
    assert loop_readable(reader)
    left, right = socket.socketpair()
    with left, right, left.makefile("rb") as stream:
        assert loop_readable(stream)


def test_files_memory_streams_and_shared_stdout_fall_back_to_the_thread(tmp_path: Path) -> None:
    path = tmp_path / "input"
    path.write_bytes(b"")
    with path.open("rb") as regular:
        assert not loop_readable(regular)
    assert not loop_readable(io.BytesIO(b""))
    left, right = socket.socketpair()
    with left, right, left.makefile("rb") as stdin, left.makefile("wb") as stdout:
        assert not loop_readable(stdin, stdout)  # one open file: stdout must stay blocking


async def test_open_line_reader_picks_the_loop_reader_for_a_pipe(
    pipe: tuple[io.BufferedReader, int],
) -> None:
    reader, _ = pipe
    assert isinstance(await open_line_reader(reader), PipeLineReader)
    assert isinstance(await open_line_reader(io.BytesIO(b"")), BoundedStdinReader)


async def test_lines_are_bounded_and_end_of_input_gives_the_rest(
    pipe: tuple[io.BufferedReader, int],
) -> None:
    reader, write_fd = pipe
    line_reader = await open_line_reader(reader)
    long_line = b"x" * (MAX_HEADER_LINE * 2 + 10) + b"\n"
    os.write(write_fd, b"short\n" + long_line + b"tail")
    os.close(write_fd)
    assert await line_reader.readline() == b"short\n"
    pieces = []
    while not (piece := await line_reader.readline()).endswith(b"\n"):
        assert 0 < len(piece) <= MAX_HEADER_LINE
        pieces.append(piece)
    assert b"".join(pieces) + piece == long_line
    assert await line_reader.readexactly(10) == b"tail"
    assert await line_reader.readline() == b""


async def test_frames_from_a_pipe_reach_the_sink_in_order(
    pipe: tuple[io.BufferedReader, int],
) -> None:
    reader, write_fd = pipe
    line_reader = await open_line_reader(reader)
    bodies = [b'{"jsonrpc": "2.0", "method": "m%d"}' % i for i in range(50)]
    big = b'{"jsonrpc": "2.0", "method": "big", "params": "%s"}' % (b"y" * 300_000)

    def write() -> None:
        for body in [*bodies, big, b"not json"]:
            os.write(write_fd, frame(body))
        os.close(write_fd)

    writer = threading.Thread(target=write)  # a big body fills the pipe: write concurrently
    writer.start()
    sink = Sink()
    await read_frames(threading.Event(), line_reader, sink)
    writer.join()
    assert [m["method"] for m in sink.messages] == [f"m{i}" for i in range(50)] + ["big"]
    assert len(sink.messages[-1]["params"]) == 300_000
    assert sink.errors == [(None, -32700)]


async def test_header_spellings_and_split_headers_frame_alike() -> None:
    stream = asyncio.StreamReader(limit=MAX_HEADER_LINE)
    body = b'{"jsonrpc": "2.0", "method": "m"}'
    n = len(body)
    spellings = [
        b"Content-Length: %d\r\n\r\n" % n,
        b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc\r\n\r\n" % n,
        b"content-length:%d \r\n\r\n" % n,
        b"Content-Length: %d\n\n" % n,
        b"X-Junk: " + b"z" * (MAX_HEADER_LINE + 5) + b"Content-Length: %d\r\n\r\n" % n,
        b"Content-Length: 0%d\r\n\r\n" % n,
    ]
    for header in spellings:
        stream.feed_data(header + body)
    stream.feed_data(b"Content-Length: 99999999999\r\n\r\n" + body)  # refused, then skipped
    stream.feed_data(b"Content-Length: %d\r\n\r\n" % n + body)
    stream.feed_eof()
    sink = Sink()
    await read_frames(threading.Event(), PipeLineReader(stream), sink)
    assert [m["method"] for m in sink.messages] == ["m"] * (len(spellings) + 1)
    assert sink.errors == [(None, -32600)]

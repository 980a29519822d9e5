"""The frame reader: how bytes become frames, and which reader reads stdin."""

from __future__ import annotations

import io
import os
import random
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from lsp_server.server.framing import (
    INVALID_REQUEST,
    MAX_HEADER_LINE,
    PARSE_ERROR,
    FrameDecoder,
    FrameError,
    deliver,
    loop_readable,
    read_stream,
)

BODY = b'{"jsonrpc": "2.0", "method": "m"}'


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

    def __init__(self, failing: str | None = None) -> None:
        self.messages: list[dict[str, Any]] = []
        self.errors: list[tuple[Any, int]] = []
        self.failing = failing

    def receive(self, data: dict[str, Any]) -> None:
        if data.get("method") == self.failing:
            raise RuntimeError("a handler failed")
        self.messages.append(data)

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        self.errors.append((msg_id, code))


class CountingExecutor(ThreadPoolExecutor):
    """A thread pool that counts the work handed to it."""

    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.submitted = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def hostile_stream() -> bytes:
    """Well-formed frames among every kind of framing trouble a broken client writes."""
    n = len(BODY)
    return b"".join(
        [
            frame(BODY),
            b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc\r\n\r\n" % n + BODY,
            b"content-length:%d \r\n\r\n" % n + BODY,
            b"Content-Length: %d\n\n" % n + BODY,
            b"X-Junk: " + b"z" * (MAX_HEADER_LINE + 5) + b"Content-Length: %d\r\n\r\n" % n + BODY,
            # the header straddles the bound of a line's first piece
            b"X-Junk: " + b"z" * (MAX_HEADER_LINE - 13) + b"Content-Length: %d\r\n\r\n" % n + BODY,
            b"Content-Length: 0%d\r\n\r\n" % n + BODY,
            b"Content-Length: 99999999999\r\n\r\n" + BODY,  # refused, then skipped
            frame(BODY),
            b"Content-Length: ten\r\n\r\n",  # not a number
            b"Content-Type: text/plain\r\n\r\n",  # no length at all
            frame(b"not json"),
            frame(BODY),
        ]
    )


def decode(data: bytes, cuts: list[int]) -> list[bytes | FrameError]:
    """Everything a decoder hands out for ``data`` fed in pieces cut at ``cuts``."""
    decoder = FrameDecoder()
    out: list[bytes | FrameError] = []
    start = 0
    for cut in [*sorted(cuts), len(data)]:
        out.extend(decoder.feed(data[start:cut]))
        start = cut
    return out


def test_header_spellings_and_troubles_frame_as_clients_mean_them() -> None:
    out = decode(hostile_stream(), [])
    assert [item for item in out if isinstance(item, bytes)] == [BODY] * 8 + [b"not json", BODY]
    assert [item.code for item in out if isinstance(item, FrameError)] == [
        INVALID_REQUEST,  # the length above the limit
        PARSE_ERROR,  # the length that is not a number
        PARSE_ERROR,  # the header block without a length
    ]


def test_how_the_input_is_cut_into_reads_changes_nothing() -> None:
    data = hostile_stream()
    whole = decode(data, [])
    assert decode(data, list(range(1, len(data)))) == whole  # one byte per read
    rng = random.Random(7)
    for _ in range(20):
        assert decode(data, rng.sample(range(1, len(data)), rng.randint(1, 40))) == whole


def test_a_line_without_an_end_is_never_buffered_whole() -> None:
    decoder = FrameDecoder()
    for _ in range(64):
        assert decoder.feed(b"x" * 10_000) == []
        assert decoder.buffered < MAX_HEADER_LINE
    assert decoder.feed(b"\r\n" + frame(BODY)) == [BODY]
    assert decoder.buffered == 0


def test_a_refused_length_skips_its_body_in_bounded_pieces() -> None:
    decoder = FrameDecoder()
    [refused] = decoder.feed(b"Content-Length: %d\r\n\r\n" % (1 << 40))
    assert isinstance(refused, FrameError) and refused.code == INVALID_REQUEST
    for _ in range(64):
        assert decoder.feed(b"y" * 10_000) == []
        assert decoder.buffered < MAX_HEADER_LINE
    assert decoder.feed(b"\r\n" + frame(BODY)) == [BODY]


def test_a_failing_message_does_not_stop_the_ones_after_it() -> None:
    sink = Sink(failing="bad")
    bad = b'{"jsonrpc": "2.0", "method": "bad"}'
    deliver(sink, FrameDecoder().feed(frame(bad) + frame(b"[]") + frame(BODY)))
    assert [m["method"] for m in sink.messages] == ["m"]
    assert sink.errors == [(None, INVALID_REQUEST)]  # the batch


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


async def test_frames_from_a_pipe_reach_the_sink_in_order_without_a_thread(
    pipe: tuple[io.BufferedReader, int],
) -> None:
    reader, write_fd = pipe
    bodies = [b'{"jsonrpc": "2.0", "method": "m%d"}' % i for i in range(50)]
    big = b'{"jsonrpc": "2.0", "method": "big", "params": "%s"}' % (b"y" * 300_000)

    def write() -> None:
        for body in [*bodies, big, b"not json"]:
            os.write(write_fd, frame(body))
        os.close(write_fd)

    writer = threading.Thread(target=write)  # a big body fills the pipe: write concurrently
    writer.start()
    sink = Sink()
    with CountingExecutor() as executor:
        await read_stream(reader, sink, threading.Event(), executor)
    writer.join()
    assert executor.submitted == 0
    assert [m["method"] for m in sink.messages] == [f"m{i}" for i in range(50)] + ["big"]
    assert len(sink.messages[-1]["params"]) == 300_000
    assert sink.errors == [(None, PARSE_ERROR)]


async def test_other_streams_are_read_in_a_thread_to_the_same_frames() -> None:
    sink = Sink()
    with CountingExecutor() as executor:
        await read_stream(io.BytesIO(hostile_stream()), sink, threading.Event(), executor)
    assert executor.submitted > 0
    assert [m["method"] for m in sink.messages] == ["m"] * 9
    assert [code for _, code in sink.errors] == [
        INVALID_REQUEST,
        PARSE_ERROR,
        PARSE_ERROR,
        PARSE_ERROR,  # the body that is not JSON
    ]

"""Reading stdin on the event loop itself when it is a pipe or a socket.

pygls (and ``framing.BoundedStdinReader``) read stdin with blocking calls in
a worker thread: every header line and every body is one round trip through
the thread pool (submit, wake the worker, read, wake the loop through its
self-pipe), four per message. On a loaded machine each wake-up costs tens to
hundreds of microseconds, which is more than answering a cache hit.

When stdin is a pipe or a socket, as it is under every editor, ``PipeLineReader``
registers it with the event loop instead (``loop.connect_read_pipe``): the
bytes of a message arrive with one ``epoll`` wake-up and are parsed without
leaving the loop. ``open_line_reader`` falls back to the thread reader for
anything else (a terminal, a regular file, an in-memory stream) and when
stdin and stdout share one open file (making stdin non-blocking would make
stdout writes fail with ``BlockingIOError``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from concurrent.futures import Executor
from typing import BinaryIO

from lsp_server.framing import MAX_HEADER_LINE, BoundedStdinReader, LineReader

logger = logging.getLogger(__name__)


class PipeLineReader:
    """A ``LineReader`` over an ``asyncio.StreamReader`` fed by the loop."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def readline(self) -> bytes:
        """One line, or the next ``MAX_HEADER_LINE`` bytes of a longer one."""
        try:
            return await self._reader.readuntil(b"\n")
        except asyncio.LimitOverrunError:
            # No newline within the limit: hand out a bounded piece, like the thread reader.
            return await self._reader.read(MAX_HEADER_LINE)
        except asyncio.IncompleteReadError as exc:
            return exc.partial  # end of input

    async def readexactly(self, n: int) -> bytes:
        """``n`` bytes (fewer at end of input)."""
        try:
            return await self._reader.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


def loop_readable(stream: BinaryIO, other: BinaryIO | None = None) -> bool:
    """Whether ``stream`` is a pipe or socket the event loop can watch on its own.

    ``other`` (stdout) must not be the same open file: the loop makes the
    file non-blocking, which would break blocking writes to it.
    """
    try:
        fd = stream.fileno()
        info = os.fstat(fd)
    except (AttributeError, OSError, ValueError):
        return False
    if not (stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode)):
        return False
    if other is not None:
        try:
            if os.path.samestat(info, os.fstat(other.fileno())):
                return False
        except (AttributeError, OSError, ValueError):
            pass
    return True


async def open_line_reader(
    stream: BinaryIO, executor: Executor | None = None, *, stdout: BinaryIO | None = None
) -> LineReader:
    """The fastest safe reader for ``stream``: on the loop if it can be, else in a thread."""
    if loop_readable(stream, stdout):
        loop = asyncio.get_running_loop()
        # The limit bounds a header line; bodies are read with readexactly, unbounded by it.
        reader = asyncio.StreamReader(limit=MAX_HEADER_LINE, loop=loop)
        protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
        await loop.connect_read_pipe(lambda: protocol, stream)
        logger.debug("reading stdin on the event loop")
        return PipeLineReader(reader)
    logger.debug("reading stdin in a worker thread")
    return BoundedStdinReader(stream, executor)

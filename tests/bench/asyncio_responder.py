"""The wire floor: a plain asyncio JSON-RPC responder, no LSP framework at all.

It reads stdin on the event loop, parses each ``Content-Length`` frame with
``json``, and answers an inline completion request with an item of the same
shape scopecache sends for a hit (text, range, accept command), built and
serialized per request; every other request gets ``null``, and
notifications (the edits) are read and dropped. The hit round trip is
measured against this in the same run (``bench_hitpath``), so the ratio
shows what pygls and scopecache add to reading, decoding, encoding and
writing one message.

By default each frame is answered in the read callback that completed it
(``asyncio.Protocol.data_received``), as the server dispatches its frames
(``lsp_server/server/framing.py``): no task to wake, no extra loop turn.
``--stream-reader`` reads with a ``StreamReader`` in a task instead, the
way most asyncio code reads a pipe: one task wake-up and loop turn more per
message. Both are floors; the first is the one the server's own reading
matches.

Run by the benchmark as ``python asyncio_responder.py [--stream-reader]``
(other arguments, such as the log options the driver passes, are ignored).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, BinaryIO

INLINE = "textDocument/inlineCompletion"
HEADER_END = b"\r\n\r\n"


def answer(method: str, params: Any) -> Any:
    """The result for one request."""
    if method == "initialize":
        return {"capabilities": {"inlineCompletionProvider": {}}, "serverInfo": {"name": "floor"}}
    if method == INLINE:
        cursor = params["position"]
        return {
            "items": [
                {
                    "insertText": '"Hello, " + name.title()',
                    "range": {"start": cursor, "end": cursor},
                    "command": {
                        "title": "Accept",
                        "command": "scopecache.accepted",
                        "arguments": ["s1", {"source": "exact"}],
                    },
                }
            ]
        }
    return None


def content_length(header: bytes) -> int:
    """The ``Content-Length`` of a header block."""
    for line in header.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 0


def respond(message: dict[str, Any], out: BinaryIO) -> bool:
    """Answer one message (a request) or drop it (a notification); False at ``exit``."""
    method = message.get("method")
    if method == "exit":
        return False
    if "id" in message and method is not None:
        result = answer(method, message.get("params"))
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
        out.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        out.flush()
    return True


class CallbackResponder(asyncio.Protocol):
    """Frames answered in the read callback that completes them."""

    def __init__(self, out: BinaryIO, finished: asyncio.Future[None]) -> None:
        self._out = out
        self._finished = finished
        self._pending = bytearray()

    def data_received(self, data: bytes) -> None:
        """Answer every frame ``data`` completes."""
        pending = self._pending
        pending += data
        at = 0
        while True:
            end = pending.find(HEADER_END, at)
            if end < 0:
                break
            start = end + len(HEADER_END)
            length = content_length(bytes(pending[at:end]))
            if len(pending) - start < length:
                break
            message = json.loads(pending[start : start + length])
            at = start + length
            if not respond(message, self._out):
                self._finish()
                return
        del pending[:at]

    def eof_received(self) -> None:
        """End of input."""
        self._finish()

    def connection_lost(self, exc: Exception | None) -> None:
        """The pipe closed."""
        self._finish()

    def _finish(self) -> None:
        if not self._finished.done():
            self._finished.set_result(None)


async def serve_in_callback() -> None:
    """Answer frames from stdin in the read callback until ``exit`` or end of input."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[None] = loop.create_future()
    out = sys.stdout.buffer
    await loop.connect_read_pipe(lambda: CallbackResponder(out, finished), sys.stdin)
    await finished


async def serve_with_stream_reader() -> None:
    """Answer frames from stdin read by a task with a ``StreamReader``."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer
    while True:
        try:
            header = await reader.readuntil(HEADER_END)
        except asyncio.IncompleteReadError:
            return
        message = json.loads(await reader.readexactly(content_length(header)))
        if not respond(message, out):
            return


if __name__ == "__main__":
    asyncio.run(
        serve_with_stream_reader() if "--stream-reader" in sys.argv else serve_in_callback()
    )

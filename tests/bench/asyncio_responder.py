"""The wire floor: a plain asyncio JSON-RPC responder, no LSP framework at all.

It reads stdin on the event loop, parses each ``Content-Length`` frame with
``json``, and answers an inline completion request with an item of the same
shape scopecache sends for a hit (text, range, accept command), built and
serialized per request; every other request gets ``null``. The hit round trip
is measured against this in the same run (``bench_hitpath``), so the ratio
shows what pygls and scopecache add to reading, decoding, encoding and
writing one message.

Run by the benchmark as ``python asyncio_responder.py`` (extra arguments,
such as the log options the driver passes, are ignored).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

INLINE = "textDocument/inlineCompletion"


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


async def serve() -> None:
    """Answer frames from stdin until ``exit`` or end of input."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer
    while True:
        try:
            header = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            return
        length = 0
        for line in header.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        message = json.loads(await reader.readexactly(length))
        method = message.get("method")
        if method == "exit":
            return
        if "id" not in message or method is None:
            continue  # a notification
        body = json.dumps(
            {"jsonrpc": "2.0", "id": message["id"], "result": answer(method, message.get("params"))}
        ).encode()
        out.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        out.flush()


if __name__ == "__main__":
    asyncio.run(serve())

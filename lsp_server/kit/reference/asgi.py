"""Just enough raw ASGI for the reference service: bodies, headers, responses.

The service needs exact control over when headers go out, how a stream is
chunked and what happens when a client disappears, which a framework would
hide; the surface is small enough that a few helpers replace one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from transport.tasks import stop_tasks

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MAX_BODY = 8 * 1024 * 1024


class ClientGone(Exception):
    """The client disconnected or reset the stream."""


def header(scope: Scope, name: str) -> str | None:
    """The first value of request header ``name`` (case-insensitive)."""
    wanted = name.lower().encode()
    for key, value in scope.get("headers", []):
        if key.lower() == wanted:
            return bytes(value).decode("latin-1")
    return None


async def read_body(receive: Receive) -> bytes:
    """The whole request body; raises ``ClientGone`` on disconnect."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size <= MAX_BODY:
            parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


async def start(
    send: Send, status: int, content_type: str, headers: Iterable[tuple[str, str]] = ()
) -> None:
    """Send the response head."""
    raw = [(b"content-type", content_type.encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in headers]
    await send({"type": "http.response.start", "status": status, "headers": raw})


async def body(send: Send, data: bytes, more: bool = False) -> None:
    """Send a piece of the response body."""
    await send({"type": "http.response.body", "body": data, "more_body": more})


async def send_bytes(
    send: Send,
    status: int,
    data: bytes,
    content_type: str = "application/json",
    headers: Iterable[tuple[str, str]] = (),
) -> None:
    """A complete response."""
    all_headers = [("content-length", str(len(data))), *headers]
    await start(send, status, content_type, all_headers)
    await body(send, data)


async def send_json(
    send: Send, status: int, obj: Any, headers: Iterable[tuple[str, str]] = ()
) -> None:
    """A complete JSON response."""
    await send_bytes(send, status, json.dumps(obj).encode(), "application/json", headers)


async def send_error(
    send: Send, status: int, message: str, headers: Iterable[tuple[str, str]] = ()
) -> None:
    """An OpenAI-style JSON error."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    await send_json(send, status, {"error": {"message": message, "type": kind}}, headers)


class ClientWatch:
    """Watches ``receive`` for ``http.disconnect`` while a response is written.

    Use as an async context manager after the body has been read; ``gone``
    is set as soon as the client resets the stream or closes the connection.
    """

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self.gone = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ClientWatch:
        self._task = asyncio.create_task(self._watch())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await stop_tasks(self._task)

    async def _watch(self) -> None:
        while True:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                self.gone.set()
                return

    async def sleep(self, seconds: float) -> None:
        """Sleep, but raise ``ClientGone`` as soon as the client leaves."""
        if self.gone.is_set():
            raise ClientGone
        if seconds <= 0:
            await asyncio.sleep(0)
        else:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.gone.wait(), seconds)
        if self.gone.is_set():
            raise ClientGone

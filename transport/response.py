"""Reading one upstream HTTP response: status, body and the end of a stream.

An error status becomes the ``transport.errors`` exception it stands for
(429/503 rate limiting with its Retry-After, 401/403 rejected credentials);
a non-streamed JSON body is read up to a size limit; after a stream's end
marker the little that may follow is drained, so the stream ends cleanly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx

from transport import errors
from transport.resilience import parse_retry_after

#: at most this many bytes of a non-streamed JSON answer are read
MAX_BODY_BYTES = 1 << 20
#: after the end marker, at most this much trailing data is read before closing
DRAIN_LIMIT_BYTES = 16 * 1024


def raise_for_status(response: httpx.Response) -> None:
    """Raise the ``TransportError`` an HTTP error status stands for."""
    status = response.status_code
    if status < 400:
        return
    retry_after = parse_retry_after(response.headers.get("retry-after"))
    if status in (429, 503):
        raise errors.RateLimited(status, retry_after=retry_after)
    if status in (401, 403):
        message = f"the service refused our credentials (HTTP {status})"
        raise errors.AuthRejected(status, message)
    raise errors.UpstreamStatusError(status, retry_after=retry_after)


def is_json(response: httpx.Response) -> bool:
    """A service that ignored ``stream: true`` answers with one JSON document."""
    content_type: str = response.headers.get("content-type", "")
    return content_type.startswith("application/json")


async def read_body(raw: AsyncIterator[bytes]) -> str:
    """A non-streamed answer's body as text, at most ``MAX_BODY_BYTES`` of it."""
    body = b""
    async for part in raw:
        body += part
        if len(body) > MAX_BODY_BYTES:
            raise errors.UpstreamProtocolError("answer exceeds the size limit")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise errors.UpstreamProtocolError("answer is not valid UTF-8") from exc


async def drain(raw: AsyncIterator[bytes]) -> None:
    """Read the little that may follow the end marker (the END_STREAM frame).

    Closing a stream before END_STREAM arrived would reset it, and the
    service would count a finished answer as cancelled.
    """
    seen = 0
    async for part in raw:
        seen += len(part)
        if seen > DRAIN_LIMIT_BYTES:
            break

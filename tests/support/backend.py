"""The HTTP completion backend as the transport's end-to-end tests use it.

    async with started_backend(EndpointOptions(endpoint=svc.url, ...)) as backend:
        assert await complete(backend)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from transport.backend import CompletionRequest
from transport.http import HttpCompletionBackend
from transport.options import EndpointOptions

#: a prompt the reference service's test corpus always continues
REQUEST = CompletionRequest(prefix="def ", suffix="")


@contextlib.asynccontextmanager
async def started_backend(
    options: EndpointOptions, **kwargs: Any
) -> AsyncIterator[HttpCompletionBackend]:
    """``HttpCompletionBackend(options, **kwargs)``, started, and closed on exit."""
    backend = HttpCompletionBackend(options, **kwargs)
    try:
        await backend.start()  # logs a failed pre-connect, does not raise
        yield backend
    finally:
        await backend.aclose()


async def complete(backend: HttpCompletionBackend, request: CompletionRequest = REQUEST) -> str:
    """The whole streamed answer to ``request``."""
    return "".join([chunk async for chunk in backend.stream(request)])


async def cancel_task_mid_stream(
    backend: HttpCompletionBackend, request: CompletionRequest = REQUEST
) -> None:
    """Stream ``request`` in a task and cancel the task once the first chunk arrived."""
    started = asyncio.Event()

    async def consume() -> None:
        async for _ in backend.stream(request):
            started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return
    raise AssertionError("the stream ended before it was cancelled")

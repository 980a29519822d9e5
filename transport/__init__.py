"""The road to the completion service.

Plugin authors implement ``CompletionBackend`` for their own service and pass
it to ``lsp_server.create_server(backend=...)``; ``StaticBackend`` is the fake
that ships beside that seam. The HTTP implementation (DNS prefetch, pooled
HTTP/2, providers, resilience) is built by ``transport.factory.build_backend``.
"""

from __future__ import annotations

from transport.backend import (
    CompletionBackend,
    CompletionRequest,
    StaticBackend,
    TransportCounters,
)
from transport.errors import TransportError

__all__ = [
    "CompletionBackend",
    "CompletionRequest",
    "StaticBackend",
    "TransportCounters",
    "TransportError",
]

"""Embed scopecache: your own completion service behind scopecache's cache.

Run it as an editor's language server command (``python examples/embed.py``);
it speaks LSP on stdio. ``ShoutingBackend`` stands in for your service: any
``transport.CompletionBackend`` works, and every miss scopecache cannot
answer from its cache reaches it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from lsp_server import create_server
from lsp_server.settings import Settings
from transport import CompletionBackend, CompletionRequest


class ShoutingBackend(CompletionBackend):
    """A toy service: completes every line with the last word, upper-cased."""

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, request: CompletionRequest) -> AsyncIterator[str]:
        """Yield the completion in chunks, as a real service streams tokens."""
        self.calls += 1
        words = request.prefix.split()
        last = words[-1] if words else "hello"
        for chunk in (" # ", last.upper(), "!"):
            yield chunk


def main() -> None:
    """Serve LSP on stdio with the toy backend and default settings."""
    settings = Settings()
    settings.cache.policy = "hybrid"
    server = create_server(settings, backend=ShoutingBackend())
    server.start_io()


if __name__ == "__main__":
    main()

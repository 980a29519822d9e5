"""The scopecache language server.

Plugin authors embed it with ``create_server``::

    from lsp_server import create_server
    server = create_server(settings)      # a configured pygls LanguageServer
    server.start_io()                     # or start_tcp(host, port)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cache.store import CompletionStore
    from lsp_server.completion.pipeline import SharedTier
    from lsp_server.server.language_server import ScopecacheServer
    from lsp_server.settings import Settings
    from transport.backend import CompletionBackend

__all__ = ["create_server"]


def create_server(
    settings: Settings | None = None,
    *,
    backend: CompletionBackend | None = None,
    store: CompletionStore | None = None,
    l2: SharedTier | None = None,
) -> ScopecacheServer:
    """A scopecache language server with every handler registered.

    ``settings`` are the defaults that the client's ``initializationOptions``
    refine. ``backend`` replaces the HTTP client built from the ``endpoint``
    setting (any ``transport.CompletionBackend``); ``store`` replaces the L1
    cache built from ``cache.*`` settings; ``l2`` the shared tier.
    """
    from lsp_server.server.handlers import register_all
    from lsp_server.server.language_server import ScopecacheServer

    server = ScopecacheServer(settings, backend=backend, store=store, l2=l2)
    register_all(server)
    return server

"""LSP handlers, one feature per module; ``register_all`` wires them to a server."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lsp_server.server.language_server import ScopecacheServer


def register_all(server: ScopecacheServer) -> None:
    """Register every handler on ``server``."""
    from lsp_server.server.handlers import completion, custom, inline, lifecycle, sync

    for module in (lifecycle, sync, inline, completion, custom):
        module.register(server)

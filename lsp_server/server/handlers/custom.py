"""scopecache/stats, scopecache/health, scopecache/clearCache and scopecache.accepted."""

from __future__ import annotations

import logging
from typing import Any

from lsp_server.server.handlers.inline import ACCEPT_COMMAND
from lsp_server.server.health import health_answer
from lsp_server.server.language_server import ScopecacheServer
from lsp_server.server.suggestions import accepted as accept_item

logger = logging.getLogger(__name__)

STATS = "scopecache/stats"
CLEAR_CACHE = "scopecache/clearCache"
HEALTH = "scopecache/health"


def register(server: ScopecacheServer) -> None:
    """Register the scopecache-specific requests and commands."""

    @server.feature(STATS)
    def stats(ls: ScopecacheServer, params: Any) -> dict[str, Any]:
        return ls.stats_snapshot()

    @server.feature(HEALTH)
    async def health(ls: ScopecacheServer, params: Any) -> dict[str, Any]:
        return await health_answer(ls)

    @server.feature(CLEAR_CACHE)
    def clear_cache(ls: ScopecacheServer, params: Any) -> dict[str, int]:
        return {"cleared": ls.pipeline.clear()}

    @server.command(ACCEPT_COMMAND)
    def accepted(ls: ScopecacheServer, *args: Any) -> dict[str, bool]:
        item_id = _first_string(args)
        if item_id is None:
            logger.debug("scopecache.accepted without an item id")
            return {"known": False}
        return {"known": accept_item(ls, item_id)}


def _first_string(args: Any) -> str | None:
    """Pygls passes command arguments either spread or as one list."""
    for arg in args:
        if isinstance(arg, str):
            return arg
        if isinstance(arg, list | tuple):
            found = _first_string(arg)
            if found is not None:
                return found
    return None

"""scopecache/stats, scopecache/health, scopecache/clearCache and scopecache.accepted.

``scopecache.accepted`` takes the arguments the server put in the item's
command, ``[item_id, {"source": ...}]``, and, when the editor accepted only
a part (a word, a line), one more object
``{"kind": "word" | "line" | "full", "acceptedLength": N}``: N is how much of
the item's text is accepted so far, in UTF-16 code units.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from lsp_server.observe.acceptance import KINDS as ACCEPT_KINDS
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
        kind, length = _accept_details(args)
        return {"known": accept_item(ls, item_id, kind=kind, length=length)}


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


def _accept_details(args: Any) -> tuple[str, int | None]:
    """The ``kind`` and ``acceptedLength`` an editor added to the arguments (full: all)."""
    kind, length = "full", None
    for arg in args:
        if isinstance(arg, list | tuple):
            nested_kind, nested_length = _accept_details(arg)
            if nested_kind != "full" or nested_length is not None:
                return nested_kind, nested_length
        if not isinstance(arg, Mapping):
            continue
        if arg.get("kind") in ACCEPT_KINDS:
            kind = arg["kind"]
        value = arg.get("acceptedLength")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            length = value
    return kind, length

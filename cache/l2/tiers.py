"""Choosing the L2 tier from plain setting values, naming its namespace, and prewarming L1 from it.

The server passes its settings' values in (``cache`` does not import the
server): ``open_l2("sqlite", namespace=l2_namespace(endpoint, model, tenant),
sqlite_path=...)``, then ``await store.start()``, then
``await prewarm(store, l1_add, limit)`` in a background task.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from cache.entry import CachedCompletion
from cache.l2.base import L2Store
from cache.l2.memory import NullStore
from cache.l2.sqlite.store import SqliteStore

logger = logging.getLogger(__name__)


def l2_namespace(endpoint: str, model: str, tenant: str = "") -> str:
    """The namespace that keeps answers of different services, models and tenants apart."""
    return "\0".join((endpoint.rstrip("/"), model, tenant))


def open_l2(
    kind: str,
    *,
    namespace: str,
    sqlite_path: str = "",
    redis_url: str = "redis://127.0.0.1:6379/0",
    secret_env: str = "SCOPECACHE_NAMESPACE_SECRET",
    max_entries: int = 100_000,
    ttl_seconds: float = 0.0,
) -> L2Store:
    """An unstarted store for ``kind`` (``none``, ``sqlite``, ``redis``).

    Raises ``L2MissingExtra`` for ``redis`` without the redis client installed,
    and ValueError for an unknown kind.
    """
    if kind == "none":
        return NullStore(namespace)
    if kind == "sqlite":
        return SqliteStore(
            sqlite_path or None, namespace, max_entries=max_entries, ttl_seconds=ttl_seconds
        )
    if kind == "redis":
        from cache.l2.redis import DEFAULT_TTL_SECONDS, RedisStore

        secret = os.environ.get(secret_env, "").encode() or None
        if secret is None:
            logger.warning(
                "%s is not set: Redis keys are hashed but not keyed with a team secret",
                secret_env,
            )
        return RedisStore(
            redis_url, namespace, secret=secret,
            ttl_seconds=ttl_seconds or DEFAULT_TTL_SECONDS,
        )
    raise ValueError(f"unknown L2 kind {kind!r}")


async def prewarm(store: L2Store, add: Callable[[CachedCompletion], object], limit: int) -> int:
    """Hand up to ``limit`` of the store's hottest entries to ``add`` (e.g. an L1 put).

    The hottest are added last: as the most recently used they survive an L1
    smaller than ``limit``. Returns how many were added; a down store adds none.
    """
    entries = await store.hottest(limit)
    for entry in reversed(entries):  # the hottest go in last, as the most recently used
        add(entry)
    if entries:
        logger.info("prewarmed L1 with %d entries from the %s L2", len(entries), store.kind)
    return len(entries)

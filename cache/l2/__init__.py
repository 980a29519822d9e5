"""Shared cache tiers under the in-process L1: SQLite (the default), Redis, or none.

``cache.l2.tiers`` builds the configured store from plain setting values
(``open_l2``), names the namespace (``l2_namespace``) and prewarms L1
(``prewarm``). ``RedisStore`` lives in ``cache.l2.redis`` and needs the
``scopecache[redis]`` extra, so it is not imported here.
"""

from cache.l2.base import L2Change, L2Store, namespace_id
from cache.l2.errors import (
    L2Corrupt,
    L2EntryRejected,
    L2Error,
    L2MissingExtra,
    L2ReadOnly,
    L2Unavailable,
)
from cache.l2.memory import MemoryHub, MemoryStore, NullStore
from cache.l2.sqlite.file import default_sqlite_path
from cache.l2.sqlite.store import SqliteStore
from cache.l2.tiers import l2_namespace, open_l2, prewarm

__all__ = [
    "L2Change",
    "L2Corrupt",
    "L2EntryRejected",
    "L2Error",
    "L2MissingExtra",
    "L2ReadOnly",
    "L2Store",
    "L2Unavailable",
    "MemoryHub",
    "MemoryStore",
    "NullStore",
    "SqliteStore",
    "default_sqlite_path",
    "l2_namespace",
    "namespace_id",
    "open_l2",
    "prewarm",
]

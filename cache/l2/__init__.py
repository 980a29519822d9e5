"""Shared cache tiers under the in-process L1: SQLite (the default), Redis, or none.

``open_store`` is not provided here on purpose: the server picks the store
from its settings. Import the store you need::

    from cache.l2 import SqliteStore, NullStore
    from cache.l2.redis import RedisStore   # needs the ``scopecache[redis]`` extra
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
from cache.l2.sqlite import SqliteStore
from cache.l2.sqlite_file import default_sqlite_path

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
    "namespace_id",
]

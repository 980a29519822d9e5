"""The SQLite L2 file format: its schema versions and the migrations between them.

The version lives in a one-row ``schema_version`` table. Version 1 held
entries only (namespace hash, key digest, JSON value, times). Version 2 adds
a hit counter (for prewarming the hottest entries), the indexes eviction and
prewarming need, and the ``changes`` log that lets other processes sharing
the file learn which rows changed. Each migration runs in one ``BEGIN
IMMEDIATE`` transaction that re-reads the version first, so two processes
opening an old file at the same moment migrate it once.

Nothing in the file is source text used as a key: ``ns`` is a hash of the
namespace, ``digest`` a hash of the key's fingerprints, and ``key`` (in the
change log) the fingerprints themselves.
"""

from __future__ import annotations

import logging
import sqlite3

from cache.l2.errors import L2Unavailable

logger = logging.getLogger(__name__)

CURRENT_VERSION = 2

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        "CREATE TABLE schema_version (version INTEGER NOT NULL)",
        "INSERT INTO schema_version (version) VALUES (0)",
        """CREATE TABLE entries (
            ns TEXT NOT NULL,
            digest TEXT NOT NULL,
            value TEXT NOT NULL,
            created_at REAL NOT NULL,
            last_used REAL NOT NULL,
            PRIMARY KEY (ns, digest)
        )""",
    ),
    2: (
        "ALTER TABLE entries ADD COLUMN hits INTEGER NOT NULL DEFAULT 0",
        "CREATE INDEX entries_by_last_use ON entries (last_used)",
        "CREATE INDEX entries_by_heat ON entries (ns, hits, last_used)",
        """CREATE TABLE changes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            ns TEXT NOT NULL,
            digest TEXT NOT NULL,
            kind TEXT NOT NULL,
            key TEXT NOT NULL,
            writer TEXT NOT NULL
        )""",
    ),
}


def schema_version(conn: sqlite3.Connection) -> int:
    """The file's schema version; 0 for a new, empty file."""
    has_table = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if not has_table:
        return 0
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    return int(row[0]) if row else 0


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the file to ``CURRENT_VERSION``; returns the version it was at.

    ``conn`` must be in autocommit mode (``isolation_level=None``). A file from a
    newer release is left alone and reported as unavailable rather than damaged.
    """
    found = schema_version(conn)
    if found > CURRENT_VERSION:
        raise L2Unavailable(
            f"cache file has schema version {found}, newer than this release's {CURRENT_VERSION}"
        )
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = schema_version(conn)  # another process may have migrated meanwhile
            if version >= CURRENT_VERSION:
                conn.execute("COMMIT")
                return found
            for statement in MIGRATIONS[version + 1]:
                conn.execute(statement)
            conn.execute("UPDATE schema_version SET version = ?", (version + 1,))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if found:
            logger.info("migrated L2 cache file from schema %d to %d", version, version + 1)

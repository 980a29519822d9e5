"""Opening the SQLite L2 file: pragmas, the health check, moving a damaged file aside.

``open_cache_file`` returns a connection in autocommit mode, WAL journal,
``synchronous=NORMAL`` and a busy timeout, on a file that passed
``PRAGMA quick_check`` and is at the current schema version. A file that is
not a database or fails the check is renamed to
``<name>.corrupt-<timestamp>-<pid>`` (with its -wal and -shm) and replaced by
a fresh one: a cache is cheaper to rebuild than to repair, and the damaged
file stays available for a bug report. ``map_error`` turns ``sqlite3``
errors into the package's own.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import platformdirs

from cache.l2.errors import L2Corrupt, L2Error, L2ReadOnly, L2Unavailable
from cache.l2.sqlite.schema import migrate

logger = logging.getLogger(__name__)

#: seconds a call waits for another process's write lock before giving up
BUSY_TIMEOUT = 2.0

_CORRUPT = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
_READ_ONLY = ("SQLITE_FULL", "SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_IOERR")


def default_sqlite_path() -> Path:
    """``l2.sqlite`` in the user cache directory (e.g. ``~/.cache/scopecache/``)."""
    return Path(platformdirs.user_cache_dir("scopecache")) / "l2.sqlite"


def map_error(exc: sqlite3.Error) -> L2Error:
    """The package error for a ``sqlite3`` error (by its extended result code name)."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name.startswith(_CORRUPT) or "not a database" in str(exc) or "malformed" in str(exc):
        return L2Corrupt(str(exc))
    if name.startswith(_READ_ONLY):
        return L2ReadOnly(str(exc))
    return L2Unavailable(str(exc))


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any error (autocommit connections)."""
    conn.execute("BEGIN IMMEDIATE")  # take the write lock now, not on the first write
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        row = conn.execute("PRAGMA quick_check").fetchone()
        if row is None or row[0] != "ok":
            raise L2Corrupt(f"quick_check: {row[0] if row else 'no answer'}")
        migrate(conn)
    except sqlite3.Error as exc:
        conn.close()
        raise map_error(exc) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def move_aside(path: Path, reason: object) -> Path:
    """Rename a damaged cache file (and its -wal/-shm) out of the way; returns the new name."""
    stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        try:
            os.replace(f"{path}{suffix}", f"{aside}{suffix}")
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise L2ReadOnly(f"cannot move damaged {path} aside: {exc}") from exc
    logger.error(
        "L2 cache file %s is damaged (%s); moved it to %s and started a fresh one",
        path, reason, aside,
    )
    return aside


def open_cache_file(path: Path) -> sqlite3.Connection:
    """Open (creating, migrating or replacing if damaged) the cache file at ``path``."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise L2ReadOnly(f"cannot create {path.parent}: {exc}") from exc
    try:
        return _connect(path)
    except L2Corrupt as exc:
        move_aside(path, exc)
    return _connect(path)

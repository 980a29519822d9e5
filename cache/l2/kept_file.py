"""The developer's kept record, in a SQLite file of their own, never in a shared tier.

What the developer kept of the suggestions shown to them (per language,
scope kind and source: decayed tallies of suggestions kept and missed) is
theirs: a team-shared Redis must not carry it, and another developer's
habits must not move their bar. So it lives in a small SQLite file beside
the local L2 file (``kept.sqlite`` in the user cache directory by default),
opened like it (WAL, ``synchronous=NORMAL``, a busy timeout), so that a new
editor window starts from what the last one learned.

``KeptFile.load`` and ``save`` do blocking I/O: the server calls them off
the event loop. A damaged or unwritable file is a record lost, never an
error the user sees: ``load`` answers empty and ``save`` logs and gives up.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from cache.l2.sqlite.file import BUSY_TIMEOUT, default_sqlite_path, write_transaction

logger = logging.getLogger(__name__)

#: the table's layout; a file with another version is started afresh
SCHEMA_VERSION = 1


def default_kept_path() -> Path:
    """``kept.sqlite`` beside the default local L2 file."""
    return default_sqlite_path().with_name("kept.sqlite")


def kept_path(l2_kind: str, sqlite_path: str = "") -> Path | None:
    """Where the record is kept for an L2 setting: beside the local file, or nowhere.

    With a SQLite L2, beside its file (``kept.sqlite``); with Redis, in the
    user cache directory (the record is never shared); with no L2 at all
    (``cache.l2 = "none"``: nothing kept on disk) only in memory: None.
    """
    if l2_kind == "none":
        return None
    if l2_kind == "sqlite" and sqlite_path:
        return Path(sqlite_path).with_name("kept.sqlite")
    return default_kept_path()


class KeptRow(NamedTuple):
    """One dimension value's tallies: suggestions kept and missed, decayed."""

    #: ``language``, ``scope`` or ``source``
    dimension: str
    value: str
    kept: float
    missed: float


class KeptFile:
    """The kept record's SQLite file: read whole at start, written whole now and then."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else default_kept_path()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            with write_transaction(conn):
                conn.execute("DROP TABLE IF EXISTS kept")
                conn.execute(
                    "CREATE TABLE kept (dimension TEXT NOT NULL, value TEXT NOT NULL, "
                    "kept REAL NOT NULL, missed REAL NOT NULL, updated REAL NOT NULL, "
                    "PRIMARY KEY (dimension, value))"
                )
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        return conn

    def load(self) -> list[KeptRow]:
        """Every row of the record (empty when there is no usable file)."""
        try:
            conn = self._connect()
            try:
                rows = conn.execute("SELECT dimension, value, kept, missed FROM kept").fetchall()
            finally:
                conn.close()
        except (sqlite3.Error, OSError) as exc:
            logger.warning("kept record %s not read (%s): starting afresh", self.path, exc)
            return []
        return [KeptRow(str(d), str(v), float(k), float(m)) for d, v, k, m in rows]

    def save(self, rows: Iterable[KeptRow]) -> bool:
        """Replace the record with ``rows``; False (logged) when the file cannot be written."""
        now = time.time()
        try:
            conn = self._connect()
            try:
                with write_transaction(conn):
                    conn.execute("DELETE FROM kept")
                    conn.executemany(
                        "INSERT INTO kept (dimension, value, kept, missed, updated) "
                        "VALUES (?, ?, ?, ?, ?)",
                        [(r.dimension, r.value, r.kept, r.missed, now) for r in rows],
                    )
            finally:
                conn.close()
        except (sqlite3.Error, OSError) as exc:
            logger.warning("kept record %s not written: %s", self.path, exc)
            return False
        return True

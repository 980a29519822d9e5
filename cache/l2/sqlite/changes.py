"""Reading the SQLite L2's change log: what other processes stored or invalidated.

Why both a log and ``PRAGMA data_version``: the pragma is per connection,
changes only when *another* connection commits and reads no page, so an idle
poll is nearly free, but it cannot say which rows changed; the log says
which, but reading it on every poll would cost a query each time. The store
polls the pragma and reads the log only when it moved.

Each put and invalidation appends a row (sequence number, namespace hash,
key fingerprints, writer id) to ``changes`` in the same transaction as the
entry itself, so a reader that sees the row also sees the entry. A reader
keeps the last sequence number it has seen and asks for newer rows of its
namespace written by someone else; a put whose entry has since been replaced
or evicted is skipped (the newer row will say what happened).
"""

from __future__ import annotations

import logging
import sqlite3

from cache.entry import CachedCompletion
from cache.l2.base import L2Change, key_from_json

logger = logging.getLogger(__name__)


def read_changes(
    conn: sqlite3.Connection, after_seq: int, ns: str, writer: str
) -> tuple[list[L2Change], int]:
    """Changes after ``after_seq`` in namespace ``ns`` not written by ``writer``, and the new mark.

    ``conn`` must be in autocommit mode; both reads run in one snapshot so no
    row commits between them unseen.
    """
    conn.execute("BEGIN")
    try:
        rows = conn.execute(
            "SELECT c.kind, c.key, e.value FROM changes c LEFT JOIN entries e"
            " ON e.ns = c.ns AND e.digest = c.digest"
            " WHERE c.seq > ? AND c.ns = ? AND c.writer <> ? ORDER BY c.seq",
            (after_seq, ns, writer),
        ).fetchall()
        tail = conn.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0]
    finally:
        conn.execute("COMMIT")
    changes: list[L2Change] = []
    for kind, key_json, value in rows:
        try:
            key = key_from_json(key_json)
            if kind == "invalidate":
                changes.append(L2Change("invalidate", key))
            elif value is not None:
                changes.append(L2Change("put", key, CachedCompletion.from_json(value)))
        except ValueError as exc:
            logger.debug("skipping malformed L2 change: %s", exc)
    return changes, max(after_seq, int(tail))

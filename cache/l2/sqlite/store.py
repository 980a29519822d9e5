"""The default L2: one SQLite file shared live by every editor window on the machine.

Durability: the file runs in WAL mode with ``synchronous=NORMAL``. A commit
appends to the write-ahead log without an fsync, so a committed entry
survives the process being killed (kill -9, a crash): the data is in the OS
page cache and the next opener replays the log. It may be lost on power loss
or an OS crash, which for a cache costs one upstream request, whereas
``FULL`` would fsync on every stored answer.

Live sharing: each process polls ``PRAGMA data_version`` every
``poll_interval`` seconds and reads the change log only when it moved (see
``changes``).

Every call runs on one dedicated worker thread that owns the connection, so
the event loop never waits on disk or on a lock held by another process.

Recovery (``file``): a damaged file is moved aside and replaced; a
read-only location or a full disk makes the store "down" (one log line) and
the server carries on without it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from cache.entry import CachedCompletion
from cache.keys import ScopeKey
from cache.l2.base import Clock, L2Change, L2Store, key_to_json, parse_entry
from cache.l2.errors import L2Corrupt
from cache.l2.sqlite.changes import read_changes
from cache.l2.sqlite.file import (
    default_sqlite_path,
    map_error,
    open_cache_file,
    write_transaction,
)
from transport.tasks import stop_tasks

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: hits remembered before their counters are written in one transaction
HIT_BATCH = 64
#: change-log rows kept for other processes to catch up on
CHANGE_LOG_KEEP = 10_000


class SqliteStore(L2Store):
    """An L2 in one SQLite file, shared live by several processes."""

    kind = "sqlite"

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        namespace: str,
        *,
        max_entries: int = 100_000,
        ttl_seconds: float = 0.0,
        poll_interval: float = 0.25,
        clock: Clock = time.time,
        retry_initial: float = 0.25,
        retry_max: float = 10.0,
    ) -> None:
        super().__init__(namespace, clock=clock, retry_initial=retry_initial, retry_max=retry_max)
        self.path = Path(path) if path else default_sqlite_path()
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self.poll_interval = poll_interval
        self._writer = uuid.uuid4().hex
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="scopecache-l2-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._data_version = -1
        self._last_seq = 0
        self._size_known = 0
        self._puts_since_check = 0
        self._hits_pending: list[tuple[float, str, str]] = []
        # Check the cap often for small caps (tests), rarely for big ones: COUNT(*) scans.
        self._check_every = max(1, min(256, max_entries // 16))
        self._poller: asyncio.Task[None] | None = None

    # -- worker-thread side ---------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        conn = open_cache_file(self.path)
        try:
            self._data_version = conn.execute("PRAGMA data_version").fetchone()[0]
            self._last_seq = conn.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0]
            self._size_known = self._count(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _call(self, work: Callable[[sqlite3.Connection], T]) -> T:
        try:
            if self._conn is None:
                self._conn = self._open()
            return work(self._conn)
        except sqlite3.Error as exc:
            mapped = map_error(exc)
        except L2Corrupt as exc:
            mapped = exc
        if isinstance(mapped, L2Corrupt) and self._conn is not None:
            # Reopen on the next try: that re-runs the check and moves the file aside.
            self._conn.close()
            self._conn = None
        raise mapped

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, work)

    def _count(self, conn: sqlite3.Connection) -> int:
        return int(conn.execute("SELECT count(*) FROM entries WHERE ns = ?", (self.namespace_id,))
                   .fetchone()[0])

    def _expired(self, created_at: float) -> bool:
        return bool(self.ttl_seconds) and self.clock() - created_at >= self.ttl_seconds

    # -- the hooks ------------------------------------------------------------------

    async def _start(self) -> None:
        await self._run(lambda conn: None)
        if self._poller is None and self.poll_interval > 0:
            self._poller = asyncio.create_task(self._poll_forever(), name="scopecache-l2-poll")

    async def _close(self) -> None:
        if self._poller is not None:
            await stop_tasks(self._poller)
            self._poller = None

        def close() -> None:
            if self._conn is not None:
                try:
                    self._flush_hits(self._conn)
                except sqlite3.Error as exc:
                    logger.debug("could not save hit counts: %s", exc)
                self._conn.close()
                self._conn = None

        await asyncio.get_running_loop().run_in_executor(self._executor, close)
        self._executor.shutdown(wait=False)

    async def _get(self, key: ScopeKey) -> CachedCompletion | None:
        ns, digest, now = self.namespace_id, key.digest(), self.clock()

        def read(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT value, created_at FROM entries WHERE ns = ? AND digest = ?", (ns, digest)
            ).fetchone()
            if row is None:
                return None
            if self._expired(row[1]):
                conn.execute("DELETE FROM entries WHERE ns = ? AND digest = ?", (ns, digest))
                return None
            self._note_hit(conn, digest, now)
            return str(row[0])

        raw = await self._run(read)
        entry = parse_entry(raw) if raw is not None else None
        return entry if entry is not None and entry.key == key else None

    async def _put(self, entry: CachedCompletion) -> None:
        ns, digest, now = self.namespace_id, entry.key.digest(), self.clock()
        value, key_json = entry.to_json(), key_to_json(entry.key)
        self._puts_since_check += 1
        check = self._puts_since_check >= self._check_every
        if check:
            self._puts_since_check = 0

        def write(conn: sqlite3.Connection) -> None:
            with write_transaction(conn):
                known = conn.execute(
                    "SELECT 1 FROM entries WHERE ns = ? AND digest = ?", (ns, digest)
                ).fetchone()
                conn.execute(
                    "INSERT INTO entries (ns, digest, value, created_at, last_used, hits)"
                    " VALUES (?, ?, ?, ?, ?, 0) ON CONFLICT (ns, digest) DO UPDATE SET"
                    " value = excluded.value, created_at = excluded.created_at,"
                    " last_used = excluded.last_used",
                    (ns, digest, value, now, now),
                )
                conn.execute(
                    "INSERT INTO changes (ns, digest, kind, key, writer)"
                    " VALUES (?, ?, 'put', ?, ?)",
                    (ns, digest, key_json, self._writer),
                )
            self._size_known += known is None
            if check:
                self._enforce_limits(conn, now)

        await self._run(write)

    def _note_hit(self, conn: sqlite3.Connection, digest: str, now: float) -> None:
        # Hit counts are written in batches: a write per hit would double the
        # cost of an L2 hit and wake every other process's poller.
        self._hits_pending.append((now, self.namespace_id, digest))
        if len(self._hits_pending) >= HIT_BATCH:
            self._flush_hits(conn)

    def _flush_hits(self, conn: sqlite3.Connection) -> None:
        pending, self._hits_pending = self._hits_pending, []
        if pending:
            with write_transaction(conn):
                conn.executemany(
                    "UPDATE entries SET hits = hits + 1, last_used = max(last_used, ?)"
                    " WHERE ns = ? AND digest = ?",
                    pending,
                )

    def _enforce_limits(self, conn: sqlite3.Connection, now: float) -> None:
        self._flush_hits(conn)  # eviction goes by last use, so it must see every use
        if self.ttl_seconds:
            conn.execute("DELETE FROM entries WHERE created_at <= ?", (now - self.ttl_seconds,))
        total = int(conn.execute("SELECT count(*) FROM entries").fetchone()[0])
        if total > self.max_entries:
            # The cap is for the whole file (all namespaces): it bounds disk use.
            conn.execute(
                "DELETE FROM entries WHERE rowid IN"
                " (SELECT rowid FROM entries ORDER BY last_used LIMIT ?)",
                (total - self.max_entries,),
            )
        conn.execute(
            "DELETE FROM changes WHERE seq <= (SELECT max(seq) FROM changes) - ?",
            (CHANGE_LOG_KEEP,),
        )
        self._size_known = self._count(conn)

    async def _invalidate(self, key: ScopeKey) -> None:
        ns, digest, key_json = self.namespace_id, key.digest(), key_to_json(key)

        def delete(conn: sqlite3.Connection) -> None:
            with write_transaction(conn):
                gone = conn.execute(
                    "DELETE FROM entries WHERE ns = ? AND digest = ?", (ns, digest)
                ).rowcount
                conn.execute(
                    "INSERT INTO changes (ns, digest, kind, key, writer)"
                    " VALUES (?, ?, 'invalidate', ?, ?)",
                    (ns, digest, key_json, self._writer),
                )
            self._size_known -= max(gone, 0)

        await self._run(delete)

    async def _hottest(self, limit: int) -> list[CachedCompletion]:
        oldest = self.clock() - self.ttl_seconds if self.ttl_seconds else float("-inf")

        def read(conn: sqlite3.Connection) -> list[tuple[str]]:
            self._flush_hits(conn)
            return conn.execute(
                "SELECT value FROM entries WHERE ns = ? AND created_at > ?"
                " ORDER BY hits DESC, last_used DESC LIMIT ?",
                (self.namespace_id, oldest, limit),
            ).fetchall()

        rows = await self._run(read)
        return [e for e in (parse_entry(r[0]) for r in rows) if e is not None]

    def _size(self) -> int:
        return self._size_known

    # -- live sharing ---------------------------------------------------------------

    def _read_changes(self, conn: sqlite3.Connection) -> list[L2Change]:
        self._flush_hits(conn)
        # data_version moves only when another connection commits: an idle poll reads no page.
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if version == self._data_version:
            return []
        self._data_version = version
        ns, writer = self.namespace_id, self._writer
        changes, self._last_seq = read_changes(conn, self._last_seq, ns, writer)
        return changes

    async def poll_changes(self) -> int:
        """Deliver changes committed by other processes now; returns how many."""
        if not self._may_try():
            return 0
        changes = await self._guard(self._run(self._read_changes), [], "poll")
        for change in changes:
            self._publish(change)
        return len(changes)

    async def _poll_forever(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval)
            await self.poll_changes()

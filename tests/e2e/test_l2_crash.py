"""Crash safety of the SQLite L2: kill -9 mid-burst never corrupts it or loses a committed entry."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cache.l2 import namespace_id

pytestmark = pytest.mark.e2e

#: rounds per run; a soak run raises it (SCOPECACHE_CRASH_ROUNDS=200)
ROUNDS = int(os.environ.get("SCOPECACHE_CRASH_ROUNDS", "12"))

#: a writer that stores entries as fast as it can and prints each key once its put returned
WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from cache.entry import CachedCompletion
    from cache.keys import LineAnchor, ScopeKey
    from cache.l2 import SqliteStore

    async def main(path: str, round_no: int) -> None:
        store = SqliteStore(path, "crash-test", poll_interval=0, max_entries=1_000_000)
        await store.start()
        i = 0
        while True:
            key = ScopeKey("python", "1-call-block", round_no, i)
            anchor = LineAnchor("python", round_no, i)
            text = "x" * (50 + i % 400)
            await store.put(CachedCompletion(key=key, anchor=anchor, line_prefix="  ", text=text))
            sys.stdout.write(key.digest() + "\\n")
            sys.stdout.flush()
            i += 1

    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
    """
)


def run_and_kill(path: Path, round_no: int, kill_after: int) -> list[str]:
    """Start a writer, SIGKILL it after ``kill_after`` reported commits; return all reported."""
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(round_no)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    committed: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        while len(committed) < kill_after and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            committed.append(line.strip())
        os.kill(proc.pid, signal.SIGKILL)
        # Whatever it printed before dying was committed too.
        rest, _ = proc.communicate(timeout=10)
        committed.extend(line for line in rest.splitlines() if line)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return committed


def test_sigkill_during_a_write_burst_keeps_the_file_sound_and_every_committed_entry(
    tmp_path: Path,
) -> None:
    path = tmp_path / "l2.sqlite"
    ns = namespace_id("crash-test")
    for round_no in range(ROUNDS):
        # Vary the moment of death so it lands at different points of the write path.
        committed = run_and_kill(path, round_no, kill_after=20 + 37 * round_no % 150)
        assert committed, "the writer never committed anything"
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            stored = {
                row[0]
                for row in conn.execute("SELECT digest FROM entries WHERE ns = ?", (ns,))
            }
        finally:
            conn.close()
        # The cap is far above what any round writes, so nothing committed was evicted.
        lost = [digest for digest in committed if digest not in stored]
        assert not lost, f"round {round_no}: {len(lost)} committed entries lost"
        assert not list(tmp_path.glob("*.corrupt-*")), "the file was judged damaged"

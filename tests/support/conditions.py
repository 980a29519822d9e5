"""Waiting on a condition in end-to-end tests, never on a fixed time.

``until`` re-checks a condition (for example a counter in a service's stats)
each time the event loop has had a moment, and fails only after a deadline
far beyond any normal run, so a loaded machine makes a test slower, not red.
``until_true`` does the same for a condition read without awaiting (a list
a callback fills, a flag, a file).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

#: seconds a condition may take on a loaded machine before the test fails
DEFAULT_DEADLINE = 60.0
#: seconds between two checks
RECHECK = 0.02


async def until(
    check: Callable[[], Awaitable[bool]], what: str, *, deadline: float = DEFAULT_DEADLINE
) -> None:
    """Return as soon as ``await check()`` is true; raise AssertionError naming ``what``."""
    give_up = time.monotonic() + deadline
    while not await check():
        if time.monotonic() > give_up:
            raise AssertionError(f"still waiting after {deadline:.0f} s for {what}")
        await asyncio.sleep(RECHECK)


async def until_true(
    check: Callable[[], bool], what: str, *, deadline: float = DEFAULT_DEADLINE
) -> None:
    """Return as soon as ``check()`` is true; raise AssertionError naming ``what``."""

    async def checked() -> bool:
        return check()

    await until(checked, what, deadline=deadline)


def until_true_blocking(
    check: Callable[[], bool], what: str, *, deadline: float = DEFAULT_DEADLINE
) -> None:
    """``until_true`` for a test without an event loop (it blocks the thread)."""
    give_up = time.monotonic() + deadline
    while not check():
        if time.monotonic() > give_up:
            raise AssertionError(f"still waiting after {deadline:.0f} s for {what}")
        time.sleep(RECHECK)

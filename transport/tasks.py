"""Stopping background tasks for certain.

On Python 3.11 ``asyncio.wait_for`` drops a cancellation that arrives in the
same loop iteration as its inner result: it returns the result and the task
runs on (CPython gh-86296, fixed in 3.12). Libraries on our paths call it
often; redis-py wraps every socket write in it. A background loop cancelled
once can therefore go on looping, and whoever awaits it waits forever.

``stop_tasks`` cancels, gives the tasks a moment to clean up, and cancels
again while any is still running, up to a bound. Every ``aclose`` of a
component with a background loop stops its loop through it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

logger = logging.getLogger(__name__)

#: how long a task may take to end after the first cancel before it is cancelled again
CLEANUP_GRACE = 1.0
#: how often a task that swallowed its cancellation is cancelled again
RECANCEL_INTERVAL = 0.25
#: how long ``stop_tasks`` tries before it gives up on a task
DEFAULT_PATIENCE = 10.0


async def stop_tasks(
    *tasks: asyncio.Task[Any] | None, patience: float = DEFAULT_PATIENCE
) -> None:
    """Cancel ``tasks`` (``None`` entries are skipped) and wait until each has ended.

    A task still running ``CLEANUP_GRACE`` seconds after the first cancel is
    cancelled again every ``RECANCEL_INTERVAL`` seconds. After ``patience``
    seconds the rest are left running and named in a warning. What a task
    raised while stopping is logged at debug level, never re-raised: stopping
    must not fail.
    """
    wanted = [task for task in tasks if task is not None]
    pending = {task for task in wanted if not task.done()}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    wait = min(CLEANUP_GRACE, patience)
    while pending:
        for task in pending:
            task.cancel()
        _done, pending = await asyncio.wait(pending, timeout=wait)
        remaining = deadline - loop.time()
        if pending and remaining <= 0:
            names = ", ".join(sorted(task.get_name() for task in pending))
            logger.warning("background tasks did not stop within %.1f s: %s", patience, names)
            break
        wait = min(RECANCEL_INTERVAL, max(remaining, 0.0))
    for task in wanted:
        if task.done() and not task.cancelled() and task.exception() is not None:
            logger.debug("task %s ended with %r while stopping", task.get_name(), task.exception())

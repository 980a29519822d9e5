"""stop_tasks: background loops end even when a cancellation is lost on the way."""

from __future__ import annotations

import asyncio
import sys

import pytest

from transport.tasks import stop_tasks


class WaitForLoop:
    """A background loop that waits through ``asyncio.wait_for``, as redis-py does."""

    def __init__(self) -> None:
        self.turns = 0
        self.waiting: asyncio.Future[None] | None = None

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self.turns += 1
            self.waiting = loop.create_future()
            await asyncio.wait_for(self.waiting, 10)

    async def until_waiting(self) -> asyncio.Future[None]:
        while self.waiting is None or self.waiting.done():
            await asyncio.sleep(0)
        return self.waiting


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12 fixed asyncio.wait_for")
async def test_on_python_311_a_single_cancel_can_be_lost_inside_wait_for() -> None:
    body = WaitForLoop()
    task = asyncio.create_task(body.run())
    (await body.until_waiting()).set_result(None)
    task.cancel()  # in the same loop iteration as the result: wait_for returns it
    await asyncio.sleep(0.05)
    assert not task.done()
    assert body.turns == 2
    await stop_tasks(task)


async def test_a_loop_whose_cancellation_was_lost_is_stopped() -> None:
    body = WaitForLoop()
    task = asyncio.create_task(body.run(), name="wait-for-loop")
    waiting = await body.until_waiting()
    waiting.set_result(None)
    await stop_tasks(task)  # its first cancel lands in the same iteration as the result
    assert task.cancelled()


async def test_a_task_that_never_stops_is_named_and_left_after_the_patience(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = asyncio.Event()

    async def stubborn() -> None:
        while not release.is_set():
            try:
                await asyncio.sleep(1)
            except asyncio.CancelledError:
                continue

    task = asyncio.create_task(stubborn(), name="stubborn-loop")
    await asyncio.sleep(0)
    await stop_tasks(task, patience=0.3)
    assert not task.done()
    assert "stubborn-loop" in caplog.text
    release.set()
    await asyncio.wait_for(task, 5)


async def test_what_a_task_raises_while_stopping_is_not_raised() -> None:
    async def fails_on_cancel() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            raise RuntimeError("cleanup failed") from None

    task = asyncio.create_task(fails_on_cancel())
    await asyncio.sleep(0)
    await stop_tasks(task, None)
    assert isinstance(task.exception(), RuntimeError)


async def test_cleanup_inside_the_grace_is_not_interrupted() -> None:
    cleaned = asyncio.Event()

    async def cleans_up() -> None:
        try:
            await asyncio.sleep(10)
        finally:
            await asyncio.sleep(0.2)  # e.g. a last write on cancel
            cleaned.set()

    task = asyncio.create_task(cleans_up())
    await asyncio.sleep(0)
    await stop_tasks(task)
    assert cleaned.is_set()


async def test_nothing_to_stop_returns_at_once() -> None:
    done = asyncio.create_task(asyncio.sleep(0))
    await done
    await stop_tasks(None, done)

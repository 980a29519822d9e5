"""Faults of the slow path: what the throttle learns, and one stream per document.

The fake backend sits at the transport seam: each request streams what the
test puts in its queue, so when the service answers, fails or is cancelled
is the test's to decide.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from lsprotocol import types

from cache.policies import make_policy
from cache.store import CompletionStore
from lsp_server.completion.inflight import InflightRegistry
from lsp_server.completion.notify import UserNotifier
from lsp_server.completion.pipeline import CompletionPipeline, keys_for
from lsp_server.completion.throttle import MissThrottle
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import SyntaxContext, syntax_context
from lsp_server.observe.stats import ServerStats
from lsp_server.settings import CompletionSettings
from tests.support import conditions
from transport.backend import CompletionBackend, CompletionRequest
from transport.cost import LOCAL_SERVER, REMOTE_SERVICE, ServiceCost
from transport.errors import NetworkError

URI = "file:///p/app.py"
HEAD = "def greet(name):\n"
END = object()
FAIL = object()


class ScriptedBackend(CompletionBackend):
    """Each request streams what the test puts in its queue: ``END`` ends it, ``FAIL`` fails it."""

    def __init__(self, cost: ServiceCost) -> None:
        self._cost = cost
        self.requests: list[CompletionRequest] = []
        self.queues: list[asyncio.Queue[object]] = []

    def cost(self) -> ServiceCost:
        return self._cost

    async def stream(self, request: CompletionRequest) -> AsyncIterator[str]:
        self.requests.append(request)
        queue: asyncio.Queue[object] = asyncio.Queue()
        self.queues.append(queue)
        while (chunk := await queue.get()) is not END:
            if chunk is FAIL:
                raise NetworkError("connection reset by the service")
            assert isinstance(chunk, str)
            yield chunk


def pipeline(backend: ScriptedBackend) -> CompletionPipeline:
    return CompletionPipeline(
        store=CompletionStore(make_policy("hybrid", 64)),
        backend=backend,
        stats=ServerStats(),
        throttle=MissThrottle(min_delay=0.0, max_delay=0.0, max_pause=0.6),
        inflight=InflightRegistry(cost=backend.cost),
        notifier=UserNotifier(lambda params: None),
        completion=CompletionSettings(),
    )


async def until(check: Callable[[], bool], what: str = "the condition") -> None:
    async def holds() -> bool:
        return check()

    await conditions.until(holds, what)


def at(line_text: str, line: int = 1, head: str = HEAD) -> SyntaxContext:
    doc = DocumentStore().open(URI, "python", 1, head + line_text)
    return syntax_context(doc, types.Position(line=line, character=len(line_text)))


def slow_service(pipe: CompletionPipeline) -> None:
    """The user types a key every 0.1 s and the service took 5 s to a first line."""
    now = [0.0]
    pipe.throttle = MissThrottle(min_delay=0.0, max_delay=0.1, max_pause=0.6, clock=lambda: now[0])
    for _ in range(5):
        now[0] += 0.1
        pipe.throttle.note_keystroke(URI)
    pipe.throttle.note_answer(5.0)
    assert pipe.throttle.slow


async def test_streams_cancelled_before_their_first_line_teach_the_throttle_nothing() -> None:
    backend = ScriptedBackend(REMOTE_SERVICE)
    pipe = pipeline(backend)
    slow_service(pipe)
    for n in range(4):
        ctx = at(f"    v{n}")
        key, anchor = keys_for(ctx)
        stream = pipe.upstream.start(URI, key, anchor, ctx)
        assert stream.first_line is not None
        # runs after the pipeline's own callbacks on the future (registration order)
        settled = asyncio.Event()
        stream.first_line.add_done_callback(lambda _, settled=settled: settled.set())
        await until(lambda n=n: len(backend.queues) == n + 1)
        pipe.inflight.cancel_document(URI)  # the user left: cancelled at once
        await settled.wait()
    assert pipe.throttle.answer == 5.0
    assert pipe.throttle.slow  # still slow: the pause rule and the first-line wait stay on


async def test_streams_that_failed_teach_the_throttle_nothing() -> None:
    backend = ScriptedBackend(REMOTE_SERVICE)
    pipe = pipeline(backend)
    slow_service(pipe)
    for n in range(4):
        ctx = at(f"    v{n}")
        task = asyncio.ensure_future(pipe.complete(URI, ctx, still_current=lambda: True))
        await until(lambda n=n: len(backend.queues) == n + 1)
        backend.queues[n].put_nowait(FAIL)
        assert await task is None  # an error is never a suggestion
    assert pipe.stats.upstream_errors == 4
    assert pipe.throttle.answer == 5.0 and pipe.throttle.slow
    assert pipe.throttle.full_answer is None  # no stream ended with an answer


async def test_an_answer_that_arrives_still_teaches_the_throttle() -> None:
    backend = ScriptedBackend(REMOTE_SERVICE)
    pipe = pipeline(backend)
    slow_service(pipe)
    task = asyncio.ensure_future(pipe.complete(URI, at("    msg = "), still_current=lambda: True))
    await until(lambda: len(backend.queues) == 1)
    backend.queues[0].put_nowait('"hi"\n')
    await task
    await until(lambda: pipe.throttle.full_answer is not None)
    assert pipe.throttle.answer is not None and pipe.throttle.answer < 5.0


NEXT_HEAD = 'def greet(name):\n    msg = "hi"\n'


async def a_miss_and_a_prefetch_behind_it() -> tuple[
    ScriptedBackend, CompletionPipeline, asyncio.Future[object]
]:
    """On a one-slot server, a miss at the service and a prefetch of the next line waiting."""
    backend = ScriptedBackend(LOCAL_SERVER)
    pipe = pipeline(backend)
    first = asyncio.ensure_future(pipe.complete(URI, at("    msg = "), still_current=lambda: True))
    await until(lambda: len(backend.queues) == 1, "the miss to reach the service")
    pipe.prefetch(URI, at("    ", line=2, head=NEXT_HEAD), predicted=(1, '    msg = "hi"'))
    return backend, pipe, first


async def test_a_prefetch_waits_for_the_documents_stream_on_a_one_slot_server() -> None:
    backend = ScriptedBackend(LOCAL_SERVER)
    pipe = pipeline(backend)
    first = asyncio.ensure_future(pipe.complete(URI, at("    msg = "), still_current=lambda: True))
    await until(lambda: len(backend.queues) == 1, "the miss to reach the service")
    # the state after accepting its answer and pressing Enter, asked while the miss streams
    started = pipe.prefetch(
        URI, at("    ", line=2, head=NEXT_HEAD), predicted=(1, '    msg = "hi"')
    )
    assert started
    assert len(pipe.inflight) == 1  # no second stream to queue behind the first
    assert pipe.speculating(URI) or pipe.upstream.waiting_to_speculate(URI)
    backend.queues[0].put_nowait('"hi"\n')
    backend.queues[0].put_nowait(END)
    await first
    await until(lambda: len(backend.requests) == 2, "the prefetch to go once the slot is free")
    assert backend.requests[1].speculative


async def test_a_waiting_prefetch_gives_its_turn_to_a_miss() -> None:
    backend, pipe, first = await a_miss_and_a_prefetch_behind_it()
    # the user typed something else: a miss of the document waits for the stream too
    other = asyncio.ensure_future(pipe.complete(URI, at("    x"), still_current=lambda: True))
    await until(lambda: pipe.turns.asked == 2, "the second miss to wait for its turn")
    backend.queues[0].put_nowait("1\n")
    backend.queues[0].put_nowait(END)
    await first
    await until(lambda: len(backend.requests) == 2, "the waiting miss to go")
    assert not backend.requests[1].speculative
    await until(lambda: pipe.upstream.speculations_yielded == 1, "the prefetch to give way")
    backend.queues[1].put_nowait(" = 2\n")
    backend.queues[1].put_nowait(END)
    await other
    assert len(backend.requests) == 2


async def test_a_waiting_prefetch_is_dropped_when_its_document_closes() -> None:
    backend, pipe, first = await a_miss_and_a_prefetch_behind_it()
    pipe.inflight.cancel_document(URI)  # the editor closed the document
    assert await first is None
    await until(lambda: not pipe.upstream.waiting_to_speculate(URI), "the prefetch to end")
    assert len(pipe.inflight) == 0 and pipe.stats.speculative_requests == 0


async def test_a_waiting_prefetch_asks_nothing_once_the_pipeline_stops() -> None:
    # At shutdown the event loop's teardown cancels the miss's stream itself
    # (not through the registry): the prefetch waiting behind it must not
    # take the free turn and ask through the backend that was just closed.
    backend, pipe, first = await a_miss_and_a_prefetch_behind_it()
    assert pipe.upstream.waiting_to_speculate(URI)
    pipe.stop()
    stream = pipe.inflight.busy(URI)
    assert stream is not None and stream.task is not None
    stream.task.cancel()
    assert await first is None
    await until(lambda: not pipe.upstream.waiting_to_speculate(URI), "the prefetch to end")
    assert len(backend.requests) == 1 and len(pipe.inflight) == 0
    assert not pipe.prefetch(URI, at("    ", line=2, head=NEXT_HEAD), predicted=(1, "    x"))
    assert await pipe.complete(URI, at("    y = "), still_current=lambda: True) is None
    assert len(backend.requests) == 1


class WaitingL2:
    """A shared tier whose lookups wait until the test answers them."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()
        self.answer = asyncio.Event()

    async def get(self, key: object) -> None:
        self.asked.set()
        await self.answer.wait()
        return None

    async def put(self, entry: object) -> None:
        return None


async def test_a_prefetch_looking_in_l2_is_given_up_when_the_pipeline_stops() -> None:
    backend = ScriptedBackend(REMOTE_SERVICE)
    pipe = pipeline(backend)
    l2 = WaitingL2()
    pipe.l2 = l2  # type: ignore[assignment]
    assert pipe.prefetch(URI, at("    ", line=2, head=NEXT_HEAD), predicted=(1, '    msg = "hi"'))
    await l2.asked.wait()
    pipe.stop()
    l2.answer.set()  # a lookup that had gone on would answer "no entry" now
    await until(lambda: not pipe.speculating(URI), "the prefetch to end")
    assert backend.requests == []

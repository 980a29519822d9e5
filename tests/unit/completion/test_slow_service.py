"""A service slower than the typist: streams survive typing, one at a time, newest state next.

The fake backend (at the transport seam) hands each request a queue the test
feeds, so what the service "generates" and when is the test's to decide.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from lsprotocol import types

from cache.policies import make_policy
from cache.store import CompletionStore
from lsp_server.completion.inflight import InflightRegistry
from lsp_server.completion.notify import UserNotifier
from lsp_server.completion.pipeline import CompletionPipeline, Suggestion
from lsp_server.completion.throttle import MissThrottle
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import SyntaxContext, syntax_context
from lsp_server.observe.stats import ServerStats
from lsp_server.settings import CompletionSettings
from tests.support import conditions
from transport.backend import CompletionBackend, CompletionRequest
from transport.cost import LOCAL_SERVER, REMOTE_SERVICE, ServiceCost

URI = "file:///p/app.py"
HEAD = "def greet(name):\n"
END = object()


class ScriptedBackend(CompletionBackend):
    """Each request streams what the test puts in its queue; ``END`` ends it."""

    def __init__(self, cost: ServiceCost) -> None:
        self._cost = cost
        self.requests: list[CompletionRequest] = []
        self.queues: list[asyncio.Queue[object]] = []
        self.closed_early: list[int] = []

    def cost(self) -> ServiceCost:
        return self._cost

    async def stream(self, request: CompletionRequest) -> AsyncIterator[str]:
        index = len(self.requests)
        self.requests.append(request)
        queue: asyncio.Queue[object] = asyncio.Queue()
        self.queues.append(queue)
        finished = False
        try:
            while (chunk := await queue.get()) is not END:
                assert isinstance(chunk, str)
                yield chunk
            finished = True
        finally:
            if not finished:
                self.closed_early.append(index)


def pipeline(backend: ScriptedBackend) -> CompletionPipeline:
    return CompletionPipeline(
        store=CompletionStore(make_policy("hybrid", 64)),
        backend=backend,
        stats=ServerStats(),
        throttle=MissThrottle(min_delay=0.0, max_delay=0.0, max_pause=0.0),
        inflight=InflightRegistry(cost=backend.cost),
        notifier=UserNotifier(lambda params: None),
        completion=CompletionSettings(),
    )


async def until(check: Callable[[], bool]) -> None:
    """Wait until ``check()`` holds (re-checked as the event loop turns)."""

    async def holds() -> bool:
        return check()

    await conditions.until(holds, "the condition")


def at(line_text: str) -> SyntaxContext:
    """The context at the end of ``line_text``, the second line of a function."""
    doc = DocumentStore().open(URI, "python", 1, HEAD + line_text)
    return syntax_context(doc, types.Position(line=1, character=len(line_text)))


def ask(pipe: CompletionPipeline, ctx: SyntaxContext) -> asyncio.Task[Suggestion | None]:
    return asyncio.ensure_future(pipe.complete(URI, ctx, still_current=lambda: True))


async def cancel(task: asyncio.Task[Suggestion | None]) -> None:
    """The editor cancels the request (the next key arrived)."""
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def asked_then_typed_on(
    pipe: CompletionPipeline, backend: ScriptedBackend, line_text: str
) -> None:
    """A miss at ``line_text`` reaches the service; the next key cancels the editor's request."""
    first = ask(pipe, at(line_text))
    await until(lambda: len(backend.queues) == 1)
    await cancel(first)


async def test_a_stream_the_user_types_forward_from_lives_on_and_serves_the_rest() -> None:
    backend = ScriptedBackend(LOCAL_SERVER)
    pipe = pipeline(backend)
    await asked_then_typed_on(pipe, backend, "    msg")
    second = ask(pipe, at("    msg = "))
    await cancel(second)
    backend.queues[0].put_nowait(' = "Hello, " + name\n')
    backend.queues[0].put_nowait(END)
    await until(lambda: pipe.inflight.completed_upstream == 1)
    later = await pipe.complete(URI, at("    msg = "), still_current=lambda: True)
    assert later is not None and (later.text, later.source) == ('"Hello, " + name', "typed")
    assert pipe.inflight.cancelled_upstream == 0 and pipe.inflight.cancelled_by == {}
    assert len(backend.requests) == 1


async def test_on_a_local_server_a_stream_that_cannot_serve_is_closed_at_its_first_token() -> None:
    backend = ScriptedBackend(LOCAL_SERVER)
    pipe = pipeline(backend)
    await asked_then_typed_on(pipe, backend, "    msg")
    # The developer deleted back over the cursor's start: the stream cannot serve.
    second = ask(pipe, at("    ms"))
    await until(lambda: pipe.turns.asked == 2)
    assert backend.closed_early == [] and pipe.inflight.doomed_upstream == 1
    assert len(backend.requests) == 1  # the new state waits its turn, it does not queue
    backend.queues[0].put_nowait("g = 1")  # the prompt is read: generation would start
    await until(lambda: len(backend.requests) == 2)
    assert backend.closed_early == [0]
    assert pipe.inflight.cancelled_by == {"moved": 1}
    backend.queues[1].put_nowait("g = 2\n")
    backend.queues[1].put_nowait(END)
    answer = await second
    assert answer is not None and answer.text == "g = 2"


async def test_on_a_remote_service_a_stream_that_cannot_serve_is_cancelled_at_once() -> None:
    backend = ScriptedBackend(REMOTE_SERVICE)
    pipe = pipeline(backend)
    await asked_then_typed_on(pipe, backend, "    msg")
    second = ask(pipe, at("    ms"))
    await until(lambda: len(backend.requests) == 2)
    assert backend.closed_early == [0] and pipe.inflight.doomed_upstream == 0
    backend.queues[1].put_nowait("g = 2\n")
    backend.queues[1].put_nowait(END)
    answer = await second
    assert answer is not None and answer.text == "g = 2"


async def test_the_newest_state_waits_for_the_stream_at_the_service_and_older_ones_give_up() -> (
    None
):
    backend = ScriptedBackend(LOCAL_SERVER)
    pipe = pipeline(backend)
    await asked_then_typed_on(pipe, backend, "    a")
    # Two states that the first stream cannot serve, the editor not cancelling the older.
    older = ask(pipe, at("    b"))
    await until(lambda: pipe.inflight.doomed_upstream == 1)
    newer = ask(pipe, at("    c"))
    await until(lambda: pipe.turns.asked == 3)
    backend.queues[0].put_nowait("x")
    assert await older is None
    await until(lambda: len(backend.requests) == 2)
    assert backend.requests[1].prefix.endswith("    c")
    backend.queues[1].put_nowait("d = 1\n")
    backend.queues[1].put_nowait(END)
    answer = await newer
    assert answer is not None and answer.text == "d = 1"
    assert pipe.turns.superseded == 1 and len(backend.requests) == 2


def slow_typist_pipeline(backend: ScriptedBackend) -> CompletionPipeline:
    """A pipeline whose service answers slower than the user types, pausing 30 s."""
    pipe = pipeline(backend)
    now = [0.0]
    pipe.throttle = MissThrottle(min_delay=0.0, max_delay=PAUSE, max_pause=PAUSE,
                                 clock=lambda: now[0])
    for _ in range(5):
        now[0] += 0.1
        pipe.throttle.note_keystroke(URI)
    pipe.throttle.note_answer(5.0)
    assert pipe.throttle.slow and pipe.throttle.pause() == PAUSE
    return pipe


#: a pause long enough that a miss waiting for it could not go meanwhile
PAUSE = 30.0


async def test_on_a_slow_service_with_nothing_at_it_the_newest_state_goes_at_once() -> None:
    backend = ScriptedBackend(LOCAL_SERVER)
    pipe = slow_typist_pipeline(backend)
    assert not pipe.inflight.at_service()
    # past the line's first word (inside it, a miss waits for the pause)
    first = ask(pipe, at("    x = a"))

    async def sent() -> bool:
        return len(backend.requests) == 1

    # not after the 30 s pause: after half a gap between keys
    await conditions.until(sent, "the miss to reach the idle service", deadline=PAUSE / 3)
    assert pipe.inflight.at_service()
    backend.queues[0].put_nowait(END)
    await first
    assert not pipe.inflight.at_service()


async def test_only_an_idle_local_server_is_asked_without_a_pause() -> None:
    local = ScriptedBackend(LOCAL_SERVER)
    pipe = pipeline(local)
    assert pipe.idle_local_server()
    first = ask(pipe, at("    a"))
    await until(lambda: len(local.queues) == 1)
    assert not pipe.idle_local_server()  # our stream is at it
    local.queues[0].put_nowait(END)
    await first
    assert pipe.idle_local_server()
    # a hosted service bills every request: a slow one still waits for a pause
    assert not pipeline(ScriptedBackend(REMOTE_SERVICE)).idle_local_server()


async def test_a_block_shows_its_first_line_as_soon_as_it_is_complete() -> None:
    backend = ScriptedBackend(LOCAL_SERVER)
    pipe = pipeline(backend)
    # a service measured slower than the typing (a fast one shows the whole block)
    now = [0.0]
    pipe.throttle = MissThrottle(min_delay=0.0, max_delay=0.0, max_pause=0.001,
                                 clock=lambda: now[0])
    for _ in range(3):
        now[0] += 0.1
        pipe.throttle.note_keystroke("other")
    pipe.throttle.note_answer(1.0)
    assert pipe.throttle.slow
    head = "def greet(name):\n"
    doc = DocumentStore().open(URI, "python", 1, head + "    if name:")
    ctx = syntax_context(doc, types.Position(line=1, character=12))
    task = ask(pipe, ctx)
    await until(lambda: len(backend.queues) == 1)
    assert backend.requests[0].multiline
    backend.queues[0].put_nowait("\n        print(name)\n")
    answer = await task
    assert answer is not None and answer.text == "\n        print(name)"
    assert pipe.inflight.busy(URI) is not None  # the rest is still being generated
    backend.queues[0].put_nowait("        return name\n    print('bye')\n")
    await until(lambda: pipe.inflight.completed_upstream == 1)
    # cut before the line that leaves the block, and stored whole
    assert backend.closed_early == [0]
    again = await pipe.complete(URI, ctx, still_current=lambda: True)
    assert again is not None and again.text == "\n        print(name)\n        return name"


async def test_a_one_line_request_asks_the_service_to_stop_at_the_line_end() -> None:
    backend = ScriptedBackend(LOCAL_SERVER)
    pipe = pipeline(backend)
    task = ask(pipe, at("    msg = "))
    await until(lambda: len(backend.queues) == 1)
    request = backend.requests[0]
    assert not request.multiline and request.max_time_ms == 1000
    # a service that ignores the stop: the client ends the answer at the line end
    backend.queues[0].put_nowait('"hi"\n    return msg\n')
    answer = await task
    assert answer is not None and answer.text == '"hi"'
    await until(lambda: pipe.inflight.completed_upstream == 1)


async def test_on_a_local_server_an_unattended_stream_is_never_cancelled_for_idleness() -> None:
    backend = ScriptedBackend(LOCAL_SERVER)
    pipe = pipeline(backend)
    pipe.inflight.adapt_grace(0.0)
    await asked_then_typed_on(pipe, backend, "    msg")
    backend.queues[0].put_nowait(" = 1")  # generating, and nobody waits for it
    await until(lambda: pipe.inflight.busy(URI) is not None and backend.queues[0].empty())
    backend.queues[0].put_nowait("\n")
    await until(lambda: pipe.inflight.completed_upstream == 1)
    assert pipe.inflight.cancelled_by == {}


async def test_on_a_remote_service_an_idle_generating_stream_is_cancelled_after_the_grace() -> None:
    backend = ScriptedBackend(REMOTE_SERVICE)
    pipe = pipeline(backend)
    await asked_then_typed_on(pipe, backend, "    msg")
    backend.queues[0].put_nowait(" = 1")
    await until(lambda: pipe.inflight.cancelled_by == {"idle": 1})
    assert backend.closed_early == [0]


async def test_an_empty_answer_at_a_line_end_says_the_line_is_done() -> None:
    backend = ScriptedBackend(LOCAL_SERVER)
    pipe = pipeline(backend)
    done: list[bool] = []
    task = asyncio.ensure_future(
        pipe.complete(URI, at("    msg = 1"), still_current=lambda: True,
                      line_done=lambda: done.append(True))
    )
    await until(lambda: len(backend.queues) == 1)
    backend.queues[0].put_nowait(END)  # the model's first token was the line's end
    assert await task is None
    assert done == [True]

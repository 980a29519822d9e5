"""A slow local server's line, shown as it comes to the developer typing through it.

On a slow local server a request waits for the first line of its answer to
be complete. A developer typing through a stream that is still generating
its line (the characters they typed are the ones it produced) has shown
the model right so far: the line so far is what they see at once, not
after the model reaches the newline, often after the next key. Nothing new
is asked of the server. A request with nothing typed through still waits
for the whole line, and so does a remote service's (a cancel there saves
the prompt, so an unattended stream is given up after a grace).

The fake backend (at the transport seam) streams what the test puts in its
queue, so what the service "generates", and when, is the test's to decide.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from lsprotocol import types

from cache.policies import make_policy
from cache.store import CompletionStore
from lsp_server.completion.inflight import InflightRegistry, InflightStream
from lsp_server.completion.notify import UserNotifier
from lsp_server.completion.pipeline import CompletionPipeline, Suggestion, keys_for
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


class QueuedBackend(CompletionBackend):
    """Each request streams what the test puts in its queue; ``END`` ends it."""

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
            assert isinstance(chunk, str)
            yield chunk


def slow_pipeline(backend: QueuedBackend) -> CompletionPipeline:
    """A pipeline whose service answers slower than the user types; no pacing waits."""
    now = [0.0]
    throttle = MissThrottle(min_delay=0.0, max_delay=0.0, max_pause=0.0, clock=lambda: now[0])
    for _ in range(5):
        now[0] += 0.1
        throttle.note_keystroke(URI)
    throttle.note_answer(5.0)
    throttle.max_pause = 1e-6  # slow (answers after the typing), with a pause of nothing
    assert throttle.slow
    return CompletionPipeline(
        store=CompletionStore(make_policy("hybrid", 64)),
        backend=backend,
        stats=ServerStats(),
        throttle=throttle,
        inflight=InflightRegistry(cost=backend.cost),
        notifier=UserNotifier(lambda params: None),
        completion=CompletionSettings(),
    )


def at(line_text: str) -> SyntaxContext:
    """The context at the end of ``line_text``, the second line of a function."""
    doc = DocumentStore().open(URI, "python", 1, HEAD + line_text)
    return syntax_context(doc, types.Position(line=1, character=len(line_text)))


def ask(pipe: CompletionPipeline, ctx: SyntaxContext) -> asyncio.Task[Suggestion | None]:
    return asyncio.ensure_future(pipe.complete(URI, ctx, still_current=lambda: True))


async def until(check: Callable[[], bool], what: str) -> None:
    async def holds() -> bool:
        return check()

    await conditions.until(holds, what)


def stream_of(pipe: CompletionPipeline) -> InflightStream:
    """The stream asked at ``    msg``."""
    stream = pipe.inflight.find(keys_for(at("    msg"))[1], "    msg")
    assert stream is not None
    return stream


async def streaming(pipe: CompletionPipeline, backend: QueuedBackend, produced: str) -> None:
    """A miss at ``    msg`` reaches the service, which has produced ``produced`` so far.

    The editor's request for that key is cancelled (the next key came).
    """
    first = ask(pipe, at("    msg"))
    await until(lambda: len(backend.queues) == 1, "the miss to reach the service")
    backend.queues[0].put_nowait(produced)
    await until(lambda: stream_of(pipe).text == produced, "the stream to have its text so far")
    first.cancel()
    await asyncio.gather(first, return_exceptions=True)


async def test_typing_through_a_line_still_coming_shows_the_line_so_far() -> None:
    backend = QueuedBackend(LOCAL_SERVER)
    pipe = slow_pipeline(backend)
    await streaming(pipe, backend, ' = "Hello, " + na')
    # the developer typed " = " as the model did: they see the rest so far at once
    typed = ask(pipe, at("    msg = "))
    await until(typed.done, "the line so far to be shown (the line is not complete)")
    shown = typed.result()
    assert shown is not None and (shown.text, shown.source) == ('"Hello, " + na', "inflight")
    assert len(backend.requests) == 1  # nothing more asked of the server
    # the line goes on; the next key sees more of it
    backend.queues[0].put_nowait("me\n")
    backend.queues[0].put_nowait(END)
    await until(lambda: pipe.inflight.completed_upstream == 1, "the stream to end")
    later = await pipe.complete(URI, at('    msg = "'), still_current=lambda: True)
    assert later is not None and later.text == 'Hello, " + name'


async def test_with_nothing_typed_through_the_whole_line_is_waited_for() -> None:
    backend = QueuedBackend(LOCAL_SERVER)
    pipe = slow_pipeline(backend)
    await streaming(pipe, backend, ' = "Hello, " + na')
    again = ask(pipe, at("    msg"))  # the same place asked again: no evidence yet
    await until(lambda: stream_of(pipe).waiters == 1, "the request to attach")
    assert not again.done()
    backend.queues[0].put_nowait("me\n")
    shown = await again
    assert shown is not None and shown.text == ' = "Hello, " + name'
    backend.queues[0].put_nowait(END)


async def test_a_remote_service_still_waits_for_the_whole_line() -> None:
    backend = QueuedBackend(REMOTE_SERVICE)
    pipe = slow_pipeline(backend)
    await streaming(pipe, backend, ' = "Hello, " + na')
    typed = ask(pipe, at("    msg = "))
    await until(lambda: stream_of(pipe).waiters == 1, "the request to attach")
    assert not typed.done()
    backend.queues[0].put_nowait("me\n")
    shown = await typed
    assert shown is not None and shown.text == '"Hello, " + name'
    backend.queues[0].put_nowait(END)
